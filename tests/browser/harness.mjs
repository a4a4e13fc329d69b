// What the browser tests share: Chromium's flags, waiting for a view, reading bar lists and
// stat cards, screenshots, a watcher that fails a test on console errors and failed
// requests, and the client library's desktop query to set beside the dashboard's.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const here = new URL('.', import.meta.url).pathname;

/** Where screenshots and timings go. */
export const ARTIFACTS = resolve(here, '../artifacts');

export const DAY_MS = 86_400_000;

/**
 * The deadline of a wait that only guards against a hang (a view that never becomes ready,
 * an element that never appears). Generous, so that a slow machine with a busy core passes:
 * no test verdict may depend on the machine's speed (speed goals live in bench.mjs).
 */
export const HANG_MS = 60_000;

/**
 * Polls `condition` (sync or async) every `every` ms until it is truthy or `timeout` ms have
 * passed; resolves to whether it held. The caller asserts afterwards, with its own message.
 */
export async function until(condition, { timeout = HANG_MS, every = 100 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Chromium's flags on this machine's closed network. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** The dashboard's duration format (h/m, minutes zero-padded after hours), written independently. */
export function dur(seconds) {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  return hours ? `${hours}h ${String(minutes).padStart(2, '0')}m` : `${minutes}m`;
}

/**
 * Collects a page's console errors, page errors, failed requests and error responses.
 * `allowQueryErrors` lets a test expect the server's 500 for a bad query.
 */
export function problemWatcher() {
  const problems = [];
  let allowQueryErrors = false;
  return {
    problems,
    watch(p) {
      p.on('console', (m) => {
        if (m.type() !== 'error') return;
        if (allowQueryErrors && /status of 500/.test(m.text())) return;
        problems.push(`console error: ${m.text()}`);
      });
      p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      p.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure() && r.failure().errorText}`));
      p.on('response', (r) => {
        const url = new URL(r.url());
        if (r.status() < 400) return;
        if (allowQueryErrors && url.pathname === '/api/0/query/' && r.status() === 500) return;
        problems.push(`HTTP ${r.status()} for ${r.request().method()} ${url.pathname}${url.search}`);
      });
    },
    /** Runs `f` while the server may answer queries with 500. */
    async allowingQueryErrors(f) {
      allowQueryErrors = true;
      try {
        return await f();
      } finally {
        allowQueryErrors = false;
      }
    },
    assertClean() {
      const found = problems.splice(0);
      assert.deepEqual(found, [], 'no console errors and no failed requests');
    },
  };
}

/** Waits until the view has rendered. */
export async function ready(p) {
  await p.waitForSelector('main[data-state="ready"]', { timeout: HANG_MS });
}

/** Goes to a route and waits until the view has rendered. */
export async function open(p, hash) {
  await p.evaluate(() => { document.getElementById('view').dataset.state = 'loading'; });
  await p.evaluate((h) => { window.location.hash = h; }, hash);
  await ready(p);
}

/** Runs `action` (a click, a key) and waits for the view it leads to. */
export async function after(p, action) {
  await p.evaluate(() => { document.getElementById('view').dataset.state = 'loading'; });
  await action();
  await ready(p);
}

export async function shot(p, name) {
  await p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** `[label, value]` of every row of a bar list panel. */
export async function bars(p, panelId) {
  const more = p.locator(`#${panelId} .show-more`);
  if (await more.count()) await more.click();
  return p.$$eval(`#${panelId} .bar-row`, (rows) => rows.map((r) => [
    r.querySelector('.bar-label').textContent, r.querySelector('.bar-value').textContent]));
}

/** Checks a bar list against expected `[name, seconds]` (longest first; ties in any order). */
export function assertBars(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: ${JSON.stringify(actual)}`);
  const want = new Map(expected.map(([k, s]) => [k, dur(s)]));
  for (const [label, value] of actual) assert.equal(value, want.get(label), `${what}: ${label}`);
  const secs = new Map(expected);
  for (let i = 1; i < actual.length; i += 1) {
    assert.ok(secs.get(actual[i - 1][0]) >= secs.get(actual[i][0]), `${what} sorted longest first`);
  }
}

/** The value of a stat card. */
export const stat = (p, id) => p.textContent(`#${id} .stat-value`);

/**
 * The canonical desktop query as the Rust client library builds it, for `ids` (a
 * `hostBuckets` result), printed by `tests/examples/print_desktop_query.rs` (built by run.sh).
 */
export function rustDesktopQuery(ids) {
  const example = resolve(here, '../../target/release/examples/print_desktop_query');
  assert.ok(existsSync(example), `${example} is missing: run cargo build --release -p aw-tests --example print_desktop_query (tests/browser/run.sh does)`);
  const manual = ids.manual ? ['--manual', ids.manual] : [];
  return execFileSync(example, [...manual, ids.window, ids.afk || '', ...ids.browsers.map((b) => b.id)], { encoding: 'utf8' });
}
