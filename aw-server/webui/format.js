// Formatting of durations, dates and times, and the day arithmetic of the date picker.

/**
 * A duration in h/m: `2h 05m`, `45m`, or `30s` under a minute (whole units, rounded down).
 */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds || 0));
  if (s < 60) return `${s}s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h === 0) return `${m}m`;
  return `${h}h ${String(m).padStart(2, '0')}m`;
}

/** A duration to the second: `1h 02m 05s`, `4m 30s`, `12.5s`. */
export function preciseDuration(seconds) {
  const x = Math.max(0, seconds || 0);
  if (x < 60) return `${Number.isInteger(x) ? x : x.toFixed(1)}s`;
  const s = Math.floor(x);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h ? `${h}h ${String(m).padStart(2, '0')}m ${sec}s` : `${m}m ${sec}s`;
}

const pad = (n) => String(n).padStart(2, '0');

/** `YYYY-MM-DD` of a Date in local time. */
export function isoDate(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** The first and last years a date may have (date inputs and URLs outside are refused). */
export const FIRST_YEAR = 1970;
export const LAST_YEAR = 2199;

/**
 * The local Date at 00:00 of a `YYYY-MM-DD` string; null when malformed, not a real day
 * (`2024-02-31`) or outside FIRST_YEAR..LAST_YEAR (a date input being typed passes through
 * years like 0002 and 0202).
 */
export function parseDate(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s || '');
  if (!m) return null;
  const [y, mo, da] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < FIRST_YEAR || y > LAST_YEAR) return null;
  const d = new Date(y, mo - 1, da);
  return d.getFullYear() === y && d.getMonth() === mo - 1 && d.getDate() === da ? d : null;
}

/** `YYYY-MM-DD` shifted by `days`. */
export function addDays(dateStr, days) {
  const d = parseDate(dateStr);
  d.setDate(d.getDate() + days);
  return isoDate(d);
}

/** Today's `YYYY-MM-DD`, counting a day as starting at `startOfDay` (`HH:MM`). */
export function today(startOfDay = '00:00') {
  const now = new Date();
  const [h, m] = startOfDay.split(':').map(Number);
  now.setHours(now.getHours() - (h || 0), now.getMinutes() - (m || 0));
  return isoDate(now);
}

/**
 * The `[start, end)` Dates of a day: local midnight (plus `startOfDay`, `HH:MM`) to the same
 * time on the next calendar day, so days across a DST change have 23 or 25 hours.
 */
export function dayRange(dateStr, startOfDay = '00:00') {
  const [h, m] = startOfDay.split(':').map(Number);
  const d = parseDate(dateStr);
  const start = new Date(d.getFullYear(), d.getMonth(), d.getDate(), h || 0, m || 0);
  const end = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1, h || 0, m || 0);
  return [start, end];
}

/** `14:05` (or `14:05:09` with seconds) in local time. */
export function clock(d, seconds = false) {
  const base = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${base}:${pad(d.getSeconds())}` : base;
}

// Made once: `toLocaleDateString` builds a formatter per call (tens of ms for a year of days).
const LONG_DATE = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' });

/** `Mon, 4 Mar 2024` for headings. */
export function longDate(dateStr) {
  return LONG_DATE.format(parseDate(dateStr));
}

/** `2024-03-04 14:05:09` in local time. */
export function dateTime(d) {
  return `${isoDate(d)} ${clock(d, true)}`;
}

/** `5 min ago`, `3 h ago`, `2 days ago`; the date and time for times ahead of the clock. */
export function ago(d, now = new Date()) {
  const s = (now - d) / 1000;
  if (s < -60) return dateTime(d).slice(0, 16);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const days = Math.floor(s / 86400);
  return days === 1 ? 'yesterday' : `${days} days ago`;
}

/** `1,234` */
export function count(n) {
  return Number(n).toLocaleString('en-US');
}

/** `1.4 MB` */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} kB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** `Work > Programming` */
export function category(names) {
  return Array.isArray(names) ? names.join(' > ') : String(names);
}
