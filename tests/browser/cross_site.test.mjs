// Cross-site requests in real Chromium (COMPATIBILITY.md, server #20): a page on another site loads the
// export as an <img>, fetches it with mode no-cors, frames it and posts a form to the API,
// and the server refuses each; a link the user follows opens; and an unpacked extension
// doing what aw-watcher-web does works with and without host permission.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';
import { HANG_MS, until } from './harness.mjs';

const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** An extension key pair: the public key goes into the manifest, and fixes the id. */
function extensionKey() {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const hex = createHash('sha256').update(der).digest('hex').slice(0, 32);
  const id = [...hex].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
  return { key: der.toString('base64'), id };
}

/** What aw-watcher-web does, as its service worker does it: info, bucket, heartbeat, list. */
const WATCHER_JS = `
self.watchOnce = async (base, bucket) => {
  const json = { 'Content-Type': 'application/json' };
  const statuses = {};
  statuses.info = (await fetch(base + '/api/0/info')).status;
  statuses.create = (await fetch(base + '/api/0/buckets/' + bucket, { method: 'POST', headers: json,
    body: JSON.stringify({ client: 'aw-client-js', type: 'web.tab.current', hostname: 'test' }) })).status;
  statuses.heartbeat = (await fetch(base + '/api/0/buckets/' + bucket + '/heartbeat?pulsetime=65', {
    method: 'POST', headers: json,
    body: JSON.stringify({ timestamp: new Date().toISOString(), duration: 0,
      data: { url: 'https://example.com/', title: 'Example', audible: false, incognito: false, tabCount: 1 } }) })).status;
  statuses.buckets = (await fetch(base + '/api/0/buckets/')).status;
  return statuses;
};
`;

let server;
let site;
let siteUrl;
let ext;
const work = mkdtempSync(join(tmpdir(), 'aw-cross-site-'));

before(async () => {
  ext = extensionKey();
  const config = join(work, 'config.toml');
  // An unpacked extension has an id of its own; the official one's is allowed by default.
  writeFileSync(config, `cors = ["chrome-extension://${ext.id}"]\n`);
  server = await startServer({ args: ['--config', config, '--verbose'] });
  await server.api('POST', 'buckets/kept', { client: 'c', type: 't', hostname: 'h' });
  // Another site: localhost is not 127.0.0.1, so its requests are cross-site.
  site = createServer((req, res) => {
    const api = `${server.url}/api/0`;
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><title>another site</title>
      <img id="img" src="${api}/export?as=img">
      <iframe src="${api}/export?as=frame"></iframe>
      <script>fetch('${api}/export?as=fetch', { mode: 'no-cors' }).catch(() => {});</script>
      <form id="form" method="POST" action="${api}/buckets/kept/events" enctype="text/plain">
        <input name='[{"timestamp":"2025-01-01T00:00:00Z","duration":1,"data":{"x":' value='"1"}}]'>
      </form>
      <a id="link" href="${api}/info">the server's info</a>`);
  });
  await new Promise((ok) => site.listen(0, '127.0.0.1', ok));
  siteUrl = `http://localhost:${site.address().port}/`;
});

after(async () => {
  if (server) await server.stop();
  if (site) site.close();
  rmSync(work, { recursive: true, force: true });
});

test('a page on another site makes the server do no work', async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', ...CHROMIUM_ARGS] });
  try {
    const page = await browser.newPage();
    const seen = [];
    page.on('response', (r) => {
      if (r.url().startsWith(server.url)) seen.push([r.request().resourceType(), r.url(), r.status()]);
    });
    page.setDefaultTimeout(HANG_MS);
    await page.goto(siteUrl);
    // Chromium hides the image's answer from the page (ORB), so the server's log tells.
    const exportsSeen = () => seen.filter(([, url]) => url.includes('/api/0/export?as='));
    const refused = (as) => new RegExp(`Refused cross-site GET /api/0/export\\?as=${as} `).test(server.log());
    // Wait (polling, however slow the machine) for the frame's and the fetch's answers and
    // the three refusals in the log; the assertions below say what is missing.
    await until(() => exportsSeen().length >= 2 && ['img', 'frame', 'fetch'].every(refused));
    const exports = exportsSeen();
    assert.deepEqual(exports.map(([kind]) => kind).sort(), ['document', 'fetch'], JSON.stringify(seen));
    for (const [kind, url, status] of exports) assert.equal(status, 403, `${kind} ${url}`);
    for (const as of ['img', 'frame', 'fetch']) {
      assert.match(server.log(), new RegExp(`Refused cross-site GET /api/0/export\\?as=${as} `), as);
    }

    // A form posted to the API carries the page's Origin: refused by CORS, nothing stored.
    const [post] = await Promise.all([
      page.waitForNavigation(),
      page.evaluate(() => document.getElementById('form').submit()),
    ]);
    assert.equal(post.status(), 403);
    assert.match(await post.text(), /not allowed \(CORS\)/);
    const events = await server.api('GET', 'buckets/kept/events');
    assert.equal(events.length, 0);

    // A link the user follows is a top-level navigation: it opens, as a typed URL would.
    await page.goto(siteUrl);
    const [nav] = await Promise.all([page.waitForNavigation(), page.click('#link')]);
    assert.equal(nav.status(), 200);
    assert.match(await nav.text(), /"device_id"/);

    assert.match(server.log(), /Refused a cross-site request from a web page/);
  } finally {
    await browser.close();
  }
});

for (const hostAccess of [true, false]) {
  test(`an extension doing what aw-watcher-web does works ${hostAccess ? 'with' : 'without'} host permission`, async () => {
    const dir = join(work, `extension-${hostAccess}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({
      manifest_version: 3,
      name: 'aw-watcher-web (test)',
      version: '1.0',
      key: ext.key,
      background: { service_worker: 'watcher.js' },
      ...(hostAccess ? { host_permissions: ['http://127.0.0.1/*', 'http://localhost/*'] } : {}),
    }));
    writeFileSync(join(dir, 'watcher.js'), WATCHER_JS);
    const context = await chromium.launchPersistentContext(join(work, `profile-${hostAccess}`), {
      executablePath: '/usr/bin/chromium',
      headless: false,
      args: ['--headless=new', ...CHROMIUM_ARGS, `--disable-extensions-except=${dir}`, `--load-extension=${dir}`],
    });
    try {
      const worker = context.serviceWorkers()[0] ?? await context.waitForEvent('serviceworker', { timeout: HANG_MS });
      assert.ok(worker.url().startsWith(`chrome-extension://${ext.id}/`), worker.url());
      const bucket = `aw-watcher-web-chromium_host-access-${hostAccess}`;
      const statuses = await worker.evaluate(([base, name]) => self.watchOnce(base, name), [server.url, bucket]);
      assert.deepEqual(statuses, { info: 200, create: 200, heartbeat: 200, buckets: 200 });
      assert.equal((await server.api('GET', `buckets/${bucket}/events`)).length, 1);
    } finally {
      await context.close();
    }
  });
}
