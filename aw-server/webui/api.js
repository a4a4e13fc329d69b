// The dashboard's only way to the server: the public /api/0/ routes, as every other client
// uses them. Failed requests throw an ApiError carrying the server's own message.

const TOKEN_KEY = 'aw-dashboard-token';

/** An HTTP or network failure, with a message fit to show the user. */
export class ApiError extends Error {
  constructor(message, status, path) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.path = path;
  }
}

/** The optional API key: given once as `?token=…` in the page URL, then kept for the tab. */
function token() {
  const fromUrl = new URLSearchParams(window.location.search).get('token');
  if (fromUrl) sessionStorage.setItem(TOKEN_KEY, fromUrl);
  return sessionStorage.getItem(TOKEN_KEY);
}

function headers(json) {
  const h = { Accept: 'application/json' };
  if (json) h['Content-Type'] = 'application/json';
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

/** The text to show for an error response: `{"message"}`, a framework error, or the status. */
function errorText(status, statusText, body) {
  try {
    const parsed = JSON.parse(body);
    if (parsed && typeof parsed.message === 'string') return parsed.message;
    if (parsed && parsed.error) {
      const e = parsed.error;
      return `${e.code} ${e.reason}${e.description ? `: ${e.description}` : ''}`;
    }
  } catch {
    // not JSON: fall through
  }
  return `HTTP ${status}${statusText ? ` ${statusText}` : ''}`;
}

/** A request to `/api/0/<path>`; resolves to the parsed JSON body (null when empty). */
export async function request(method, path, body, { raw = false } = {}) {
  const url = `/api/0/${path}`;
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(`Cannot reach the server: ${e.message}`, 0, path);
  }
  if (!res.ok && res.status !== 304) {
    throw new ApiError(errorText(res.status, res.statusText, await res.text()), res.status, path);
  }
  if (raw) return res;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

const enc = encodeURIComponent;

export const getInfo = () => request('GET', 'info');
export const getBuckets = () => request('GET', 'buckets/');
export const getSetting = (key) => request('GET', `settings/${enc(key)}`);
export const countEvents = (id) => request('GET', `buckets/${enc(id)}/events/count`);
export const deleteBucket = (id) => request('DELETE', `buckets/${enc(id)}?force=1`);
/** The built-in sync's state (`GET /api/0/sync`). */
export const getSync = () => request('GET', 'sync');

/** The database's backups and their settings (`GET /api/0/backups`). */
export const getBackups = () => request('GET', 'backups');

/** What takes the space (`GET /api/0/storage`); `fresh`: measure now and wait for it. */
export const getStorage = (fresh = false) => request('GET', fresh ? 'storage?fresh=true' : 'storage');

/** Takes a verified backup now; resolves with it (`POST /api/0/backups`). */
export const takeBackup = () => request('POST', 'backups');

/** Events of a bucket, newest first; `start`/`end` are Dates, `limit` a number. */
export function getEvents(id, { start, end, limit } = {}) {
  const q = new URLSearchParams();
  if (start) q.set('start', start.toISOString());
  if (end) q.set('end', end.toISOString());
  if (limit !== undefined) q.set('limit', String(limit));
  const qs = q.toString();
  return request('GET', `buckets/${enc(id)}/events${qs ? `?${qs}` : ''}`);
}

/**
 * Runs a query over periods (`[[Date, Date], …]`); `statements` is a list of lines, joined
 * by the server with newlines. Resolves to one result per period.
 */
export function query(periods, statements) {
  return request('POST', 'query/', {
    timeperiods: periods.map(([s, e]) => `${s.toISOString()}/${e.toISOString()}`),
    query: statements,
  });
}

/**
 * Runs a query over periods and resolves to their results added up by the server
 * (`POST /api/0/query/sum`): numbers summed, event lists merged (by the `keys` named for
 * them, `{field: {list: [key, …]}}`), longest first and cut to `limit`; with `each` (paths
 * in the result, `[['active']]`), to `{sum, each}`, `each` holding those values of every
 * period. The server keeps each period's result, so a year asked for as its days evaluates
 * only the days written since.
 */
export function querySum(periods, statements, { keys, limit, each, prepare } = {}) {
  return request('POST', 'query/sum', {
    timeperiods: periods.map(([s, e]) => `${s.toISOString()}/${e.toISOString()}`),
    query: statements,
    keys,
    limit,
    each,
    prepare,
  });
}

/** An export download: `{blob, filename}` of one bucket (`id`) or of all (`id` omitted). */
export async function exportBuckets(id) {
  const path = id === undefined ? 'export' : `buckets/${enc(id)}/export`;
  const res = await request('GET', path, undefined, { raw: true });
  const disposition = res.headers.get('Content-Disposition') || '';
  // The exact name (RFC 6266 `filename*`, sent for names that are not plain tokens) first.
  const exact = /filename\*=UTF-8''([^;\s]+)/i.exec(disposition);
  const plain = /filename="?([^";]+)"?/.exec(disposition);
  const fallback = id === undefined ? 'aw-buckets-export.json' : `aw-bucket-export_${id}.json`;
  let filename = plain ? plain[1] : fallback;
  if (exact) {
    try {
      filename = decodeURIComponent(exact[1]);
    } catch {
      // Keep the ASCII name.
    }
  }
  const blob = await res.blob();
  return { blob: new Blob([blob], { type: 'application/json' }), filename };
}

/**
 * Uploads an export document (a File or Blob holding its JSON) to POST /api/0/import.
 * `onProgress(sent, total)` follows the upload; resolves, when the server has imported it,
 * with its report `{imported, skipped, problems: [{bucket, index, reason}]}`.
 */
export function importFile(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/0/import');
    for (const [k, v] of Object.entries(headers(true))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress && onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.upload.onload = () => onProgress && onProgress(file.size, file.size, true);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        let report = { imported: null, skipped: 0, problems: [] };
        try {
          report = { ...report, ...JSON.parse(xhr.responseText) };
        } catch {
          // A server that answers an empty 200 (the reference) reports nothing.
        }
        resolve(report);
      }
      else reject(new ApiError(errorText(xhr.status, xhr.statusText, xhr.responseText), xhr.status, 'import'));
    };
    xhr.onerror = () => reject(new ApiError('Cannot reach the server', 0, 'import'));
    xhr.send(file);
  });
}
