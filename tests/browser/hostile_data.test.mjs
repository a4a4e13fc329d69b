// Hostile bucket ids, hostnames and category names in the built-in dashboard: every string
// it puts into a query reads back through the server's lexer as exactly that string, and
// one that cannot be written (it ends with a backslash) is left out with a visible notice,
// never run as part of the query. Real server, real Chromium.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { HANG_MS } from './harness.mjs';
import { literal, UnwritableError } from '../../aw-server/webui/queries.js';

const DAY = '2025-03-04';
const AT = Date.parse(`${DAY}T10:00:00Z`);
// A quote, a semicolon, a newline, a backslash inside and non-ASCII text.
const HOST = 'hö"st; RETURN = 1;\nname\\x';
// Its window bucket cannot be written into a query.
const TRAILING = 'trailing\\';
const TITLE = '<img src=x onerror="window.__pwned = 1">';
const URL = 'javascript:window.__pwned=2//https://evil.example/<b>x</b>';

let server;
let browser;
let page;
const problems = [];

async function bucket(id, type, hostname, events) {
  await server.api('POST', `buckets/${encodeURIComponent(id)}`, { client: 'test', type, hostname });
  await server.api('POST', `buckets/${encodeURIComponent(id)}/events`, events);
}

async function open(hash) {
  await page.evaluate(() => { const v = document.getElementById('view'); if (v) v.dataset.state = 'loading'; });
  await page.evaluate((h) => { window.location.hash = h; }, hash);
  await page.waitForSelector('main[data-state="ready"]', { timeout: HANG_MS });
}

before(async () => {
  server = await startServer({ dashboard: true });
  const hour = { timestamp: new Date(AT).toISOString(), duration: 3600 };
  const later = { timestamp: new Date(AT + 3_600_000).toISOString(), duration: 1800 };
  await bucket(`aw-watcher-window_${HOST}`, 'currentwindow', HOST, [
    { ...hour, data: { app: 'Editör "x"', title: 'a;b\\c' } },
    // Titles and URLs are data: shown as text, never run.
    { ...later, data: { app: 'Firefox', title: TITLE } },
  ]);
  await bucket(`aw-watcher-web-firefox_${HOST}`, 'web.tab.current', HOST, [
    { ...later, data: { url: URL, title: '<script>window.__pwned = 3</script>', audible: false, incognito: false } },
  ]);
  await bucket(`aw-watcher-afk_${HOST}`, 'afkstatus', HOST, [{ timestamp: hour.timestamp, duration: 5400, data: { status: 'not-afk' } }]);
  await bucket(`aw-watcher-window_${TRAILING}`, 'currentwindow', TRAILING, [{ ...hour, data: { app: 'Hidden', title: 't' } }]);
  await server.api('POST', 'settings/classes', [
    { id: 1, name: ['Work', 'Edit\\'], rule: { type: 'regex', regex: 'Editör' }, data: { color: '#f00' } },
    { id: 2, name: ['Quoted "name"'], rule: { type: 'regex', regex: '^Edit\\S+ "x"$' }, data: { color: '#0f0' } },
  ]);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const context = await browser.newContext({ timezoneId: 'UTC', locale: 'en-US', viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(HANG_MS);
  page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(`${server.url}/`);
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

test('every string the dashboard writes into a query reads back as itself', async () => {
  for (const text of [HOST, 'a"b', 'x"; RETURN = 1; y = "', 'line\nbreak', 'back\\slash\\ y', 'ünïcödé ✓', 'q\\"uote', '\\"', '"']) {
    const [result] = await server.api('POST', 'query', {
      timeperiods: [`${DAY}T00:00:00Z/${DAY}T01:00:00Z`],
      query: [`RETURN = ${literal(text)};`],
    });
    assert.equal(result, text, literal(text));
  }
  assert.throws(() => literal(TRAILING), UnwritableError);
});

test('a hostile host and category are shown exactly, and what cannot be written is left out with a notice', async () => {
  await open(`#/activity?date=${DAY}&host=${encodeURIComponent(HOST)}`);
  assert.equal(await page.textContent('#stat-active .stat-value'), '1h 30m');
  assert.equal(await page.textContent('#stat-top-app .stat-value'), 'Editör "x"');
  assert.match(await page.textContent('#top-titles'), /a;b\\c/);
  assert.ok((await page.textContent('#top-titles')).includes(TITLE), 'the title is shown as text');
  assert.equal(await page.$$eval('#top-titles img, #top-domains img', (n) => n.length), 0);
  // The quoted category matched; the one whose name ends with a backslash is left out.
  assert.match(await page.textContent('#categories'), /Quoted "name"/);
  const notices = await page.$$eval('.left-out', (n) => n.map((x) => x.textContent));
  assert.deepEqual(notices, ['Category “Work > Edit\\” is left out: its name or rule ends with a backslash, which a query cannot contain.']);

  await open(`#/activity?date=${DAY}&host=${encodeURIComponent(TRAILING)}`);
  const text = await page.textContent('main');
  assert.match(text, /Bucket “aw-watcher-window_trailing\\” is left out: its id ends with a backslash/);
  assert.doesNotMatch(text, /Hidden/);

  // All devices: the hostile host counts, the unwritable bucket is left out.
  await open(`#/activity?date=${DAY}&host=*`);
  assert.equal(await page.textContent('#stat-window .stat-value'), '1h 30m');
  assert.match(await page.textContent('main'), /aw-watcher-window_trailing\\” is left out/);

  // The Timeline reads by REST, where any id works.
  await open(`#/timeline?date=${DAY}&host=${encodeURIComponent(HOST)}`);
  assert.match(await page.textContent('main'), /Editör "x"/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no title, URL or id ran as code');

  // The Query page's example leaves the unwritable hostname out.
  await page.evaluate(() => sessionStorage.clear());
  await open(`#/query?date=${DAY}&host=${encodeURIComponent(TRAILING)}`);
  assert.match(await page.inputValue('textarea'), /ends with a backslash/);
  await open(`#/buckets`);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no title, URL or id ran as code');
  assert.deepEqual(problems, [], 'no console errors');
});
