// The dashboard's period arithmetic (aw-server/webui/period.js, format.js) in a time zone with
// daylight saving time, without a browser: weeks, months, years and custom ranges, days of 23
// and 25 hours, the user's first weekday, and dates that are not dates.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as period from '../../aw-server/webui/period.js';
import { dayRange, parseDate } from '../../aw-server/webui/format.js';
import { addUp, combineHosts } from '../../aw-server/webui/combine-hosts.js';

// The time zone is the process's (run.sh starts this file with TZ=Europe/Berlin); elsewhere
// the DST test is skipped rather than passing for the wrong reason.
const BERLIN = process.env.TZ === 'Europe/Berlin' ? false : 'run with TZ=Europe/Berlin';
const HOUR = 3_600_000;

test('days across a DST change have 23 and 25 hours, and a week 167', { skip: BERLIN }, () => {
  // With days from 04:00, the clock change (02:00 or 03:00) falls in the day before.
  const [a, b] = dayRange('2025-03-29', '04:00');
  assert.equal((b - a) / HOUR, 23);
  const [c, d] = dayRange('2025-10-25', '04:00');
  assert.equal((d - c) / HOUR, 25);
  const week = period.periodOf('week', '2025-03-30', { weekStart: 1 });
  assert.deepEqual([week.first, week.last], ['2025-03-24', '2025-03-30']);
  const [s, e] = period.range(week, '04:00');
  assert.equal((e - s) / HOUR, 7 * 24 - 1);
  assert.equal(s.getHours(), 4);
  assert.equal(e.getHours(), 4, 'the week ends at 04:00 summer time');
});

test('weeks start on the chosen weekday; months and years are calendar ones', () => {
  const sunday = period.periodOf('week', '2025-03-04', { weekStart: period.startOfWeek({ startOfWeek: 'Sunday' }) });
  assert.deepEqual([sunday.first, sunday.last], ['2025-03-02', '2025-03-08']);
  assert.equal(period.startOfWeek({}), 1, 'Monday when unset');
  assert.equal(period.startOfWeek({ startOfWeek: 'nonsense' }), 1);
  assert.equal(period.startOfDay({}), '04:00');
  assert.equal(period.startOfDay({ startOfDay: '06:30' }), '06:30');
  const feb = period.periodOf('month', '2024-02-10');
  assert.deepEqual([feb.first, feb.last], ['2024-02-01', '2024-02-29']);
  const jan = period.periodOf('month', '2025-01-31');
  const next = period.shift(jan, 1);
  assert.deepEqual([next.first, next.last], ['2025-02-01', '2025-02-28']);
  const year = period.previous(period.periodOf('year', '2024-07-01'));
  assert.deepEqual([year.first, year.last], ['2023-01-01', '2023-12-31']);
  assert.equal(period.days(period.periodOf('year', '2024-07-01')).length, 366);
  assert.equal(period.label(period.periodOf('week', '2025-03-04', { weekStart: 1 })), 'Week of 3 Mar 2025');
  assert.equal(period.label(feb), 'February 2024');
  assert.equal(period.previousName(period.periodOf('custom', '2025-01-10', { first: '2025-01-10', last: '2025-01-01' })), 'the 10 days before');
});

test('custom ranges are ordered, capped, and moved by their own length', () => {
  const reversed = period.periodOf('custom', '2025-02-10', { first: '2025-02-10', last: '2025-02-01' });
  assert.deepEqual([reversed.first, reversed.last], ['2025-02-01', '2025-02-10']);
  const before = period.previous(reversed);
  assert.deepEqual([before.first, before.last], ['2025-01-22', '2025-01-31']);
  const long = period.periodOf('custom', '2025-01-01', { first: '2015-01-01', last: '2025-01-01' });
  assert.equal(period.days(long).length, period.MAX_CUSTOM_DAYS);
});

test('only real days between 1970 and 2199 are dates', () => {
  for (const bad of ['2024-02-31', '0002-01-01', '0202-12-31', '9999-99-99', '2025-13-01', '2025-1-01', 'x', '', null]) {
    assert.equal(parseDate(bad), null, String(bad));
  }
  assert.equal(parseDate('2024-02-29').getDate(), 29);
  assert.equal(period.periodOf('day', '2024-02-29').first, '2024-02-29');
});

test('the day lists of several devices add up by their keys, longest first', () => {
  const ev = (app, duration) => ({ data: { app, title: 't' }, duration, timestamp: '2025-01-01T00:00:00Z' });
  assert.deepEqual(addUp([[ev('a', 5), ev('b', 3)], [ev('b', 4)]], (e) => e.data.app).map((e) => [e.data.app, e.duration]), [['b', 7], ['a', 5]]);
  const result = (apps, duration) => ({
    window: { app_events: apps, title_events: apps, cat_events: [], active_events: [], duration },
    browser: { domains: [], duration: 0 },
  });
  const both = combineHosts([result([ev('a', 10)], 10), result([ev('a', 2), ev('b', 1)], 3)]);
  assert.deepEqual(both.window.app_events.map((e) => [e.data.app, e.duration]), [['a', 12], ['b', 1]]);
  assert.equal(both.window.duration, 13);
});
