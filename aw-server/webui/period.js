// The periods the dashboard shows: a day, a week, a month, a year, or a custom range of days.
// Days start at the user's day-start offset and weeks on the user's first weekday, both
// aw-webui's settings (`startOfDay`, `startOfWeek`), with aw-webui's defaults when they are
// absent. A period is a list of whole days, so every period's numbers are the sums of its
// days' (which the server caches one by one).

import { addDays, dayRange, isoDate, longDate, parseDate, today } from './format.js';

/** The kinds of period, in the order of the controls. */
export const KINDS = ['day', 'week', 'month', 'year', 'custom'];

/** The controls' labels. */
export const LABELS = { day: 'Day', week: 'Week', month: 'Month', year: 'Year', custom: 'Custom' };

/** aw-webui's defaults for its settings. */
export const DEFAULT_START_OF_DAY = '04:00';
export const DEFAULT_START_OF_WEEK = 'Monday';

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** The longest custom range, in days (a query of more periods would be slow to draw). */
export const MAX_CUSTOM_DAYS = 1100;

/** The user's day start (`HH:MM`) from the settings, else aw-webui's default. */
export function startOfDay(settings) {
  const s = settings && settings.startOfDay;
  return typeof s === 'string' && /^\d{1,2}:\d{2}$/.test(s) ? s : DEFAULT_START_OF_DAY;
}

/** The user's first day of the week (0 = Sunday … 6) from the settings, else Monday. */
export function startOfWeek(settings) {
  const s = settings && settings.startOfWeek;
  const i = WEEKDAYS.findIndex((d) => typeof s === 'string' && d.toLowerCase() === s.toLowerCase());
  return i >= 0 ? i : WEEKDAYS.indexOf(DEFAULT_START_OF_WEEK);
}

/** Whole days from `a` to `b` (`YYYY-MM-DD`), counted on the calendar (DST-proof). */
export function daysBetween(a, b) {
  const [x, y] = [parseDate(a), parseDate(b)];
  return Math.round((Date.UTC(y.getFullYear(), y.getMonth(), y.getDate()) - Date.UTC(x.getFullYear(), x.getMonth(), x.getDate())) / 86_400_000);
}

function monthStart(date, months = 0) {
  const d = parseDate(date);
  return isoDate(new Date(d.getFullYear(), d.getMonth() + months, 1));
}

function yearStart(date, years = 0) {
  return isoDate(new Date(parseDate(date).getFullYear() + years, 0, 1));
}

/**
 * The period of `kind` holding `date` (`YYYY-MM-DD`): `{kind, first, last}`, both days
 * included. A custom period is `first`..`last` as given (swapped when reversed).
 */
export function periodOf(kind, date, { weekStart = 1, first, last } = {}) {
  switch (kind) {
    case 'week': {
      const back = (parseDate(date).getDay() - weekStart + 7) % 7;
      const start = addDays(date, -back);
      return { kind, first: start, last: addDays(start, 6) };
    }
    case 'month':
      return { kind, first: monthStart(date), last: addDays(monthStart(date, 1), -1) };
    case 'year':
      return { kind, first: yearStart(date), last: addDays(yearStart(date, 1), -1) };
    case 'custom': {
      const [a, b] = [first || date, last || date].sort();
      return { kind, first: a, last: daysBetween(a, b) >= MAX_CUSTOM_DAYS ? addDays(a, MAX_CUSTOM_DAYS - 1) : b };
    }
    default:
      return { kind: 'day', first: date, last: date };
  }
}

/** The period `n` periods after `p` (before, for negative `n`); a custom range moves by its length. */
export function shift(p, n) {
  switch (p.kind) {
    case 'week':
      return { ...p, first: addDays(p.first, 7 * n), last: addDays(p.last, 7 * n) };
    case 'month':
      return { ...p, first: monthStart(p.first, n), last: addDays(monthStart(p.first, n + 1), -1) };
    case 'year':
      return { ...p, first: yearStart(p.first, n), last: addDays(yearStart(p.first, n + 1), -1) };
    case 'custom': {
      const len = daysBetween(p.first, p.last) + 1;
      return { ...p, first: addDays(p.first, len * n), last: addDays(p.last, len * n) };
    }
    default:
      return { ...p, first: addDays(p.first, n), last: addDays(p.last, n) };
  }
}

/** The period compared against: the previous day, week, calendar month or year; for a custom range, as long a range just before it. */
export function previous(p) {
  return shift(p, -1);
}

/** Every day of the period, in order. */
export function days(p) {
  const n = daysBetween(p.first, p.last) + 1;
  return Array.from({ length: n }, (_, i) => addDays(p.first, i));
}

/** `[start, end)` Dates of the period: its first day's start to the end of its last day. */
export function range(p, sod) {
  return [dayRange(p.first, sod)[0], dayRange(p.last, sod)[1]];
}

/** Whether the period holds today (or is after it). */
export function reachesToday(p, sod) {
  return p.last >= today(sod);
}

/** The period's name for headings: `Mon, 4 Mar 2024`, `Week of 4 Mar 2024`, `March 2024`, `2024`, `4 Mar – 9 Apr 2024`. */
export function label(p) {
  const d = parseDate(p.first);
  const short = (s) => parseDate(s).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', year: 'numeric' });
  switch (p.kind) {
    case 'week':
      return `Week of ${short(p.first)}`;
    case 'month':
      return d.toLocaleDateString('en-GB', { month: 'long', year: 'numeric' });
    case 'year':
      return String(d.getFullYear());
    case 'custom':
      return `${short(p.first)} – ${short(p.last)}`;
    default:
      return longDate(p.first);
  }
}

/** What "the previous period" is called: `the previous week`. */
export function previousName(p) {
  return { day: 'the day before', week: 'the week before', month: 'the month before', year: 'the year before' }[p.kind]
    || `the ${daysBetween(p.first, p.last) + 1} days before`;
}
