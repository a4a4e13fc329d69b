// Starts the real aw-server binary on a free port with a temporary database and temporary
// XDG directories, so nothing touches the user's home.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HANG_MS } from './harness.mjs';

const here = new URL('.', import.meta.url).pathname;

export const serverBin = process.env.AW_SERVER_BIN || resolve(here, '../../target/release/aw-server');


function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * For working on the dashboard without rebuilding the binary: with `AW_DASHBOARD_DIR` set
 * (e.g. to aw-server/webui), the server is given a --webpath laid out like the embedded
 * files (index.html at /, the rest under /static/), so edits show up on reload.
 */
export const devDashboardDir = process.env.AW_DASHBOARD_DIR ? resolve(process.env.AW_DASHBOARD_DIR) : null;

function devWebpath(dir, dashboardDir) {
  const web = join(dir, 'webpath');
  mkdirSync(web);
  symlinkSync(join(dashboardDir, 'index.html'), join(web, 'index.html'));
  symlinkSync(dashboardDir, join(web, 'static'));
  return ['--webpath', web];
}

/**
 * `{url, port, api(method, path, body), restart(), stop(), db}` of a running server (`db`:
 * its database file).
 * `dashboard: true` serves the dashboard from `dashboardDir` (`AW_DASHBOARD_DIR`) when that
 * is set (see above); `binary` is another build or the reference server. `restart()` stops it with SIGTERM (a clean stop) and starts it again on the same
 * database and port.
 */
export async function startServer({ args = [], dashboard = false, binary = serverBin, dashboardDir = devDashboardDir } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'aw-browser-'));
  if (dashboard && dashboardDir) args = [...args, ...devWebpath(dir, dashboardDir)];
  const port = await freePort();
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_CACHE_HOME: join(dir, 'cache'),
  };
  let child;
  let log = '';
  const url = `http://127.0.0.1:${port}`;

  async function api(method, path, body) {
    const res = await fetch(`${url}/api/0/${path}`, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async function spawnAndWait() {
    child = spawn(binary, ['--port', String(port), '--dbpath', join(dir, 'test.db'), '--no-legacy-import', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => { log += d; });
    child.stderr.on('data', (d) => { log += d; });
    const deadline = Date.now() + HANG_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`aw-server exited with ${child.exitCode}:\n${log}`);
      try {
        await api('GET', 'info');
        break;
      } catch {
        if (Date.now() > deadline) {
          child.kill();
          throw new Error(`aw-server did not start:\n${log}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function terminate() {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => { child.kill('SIGKILL'); r(); }, 5000);
        child.once('exit', () => { clearTimeout(t); r(); });
      });
    }
  }

  async function restart() {
    await terminate();
    await spawnAndWait();
  }

  /** Kills the server with SIGKILL (no clean stop: nothing is saved) and starts it again. */
  async function killAndRestart() {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    await spawnAndWait();
  }

  async function stop() {
    await terminate();
    rmSync(dir, { recursive: true, force: true });
  }

  await spawnAndWait();
  return { url, port, api, restart, killAndRestart, stop, log: () => log, db: join(dir, 'test.db') };
}
