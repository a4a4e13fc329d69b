// Stable colours: a name always gets the same one, categories use the colour of their
// `classes` entry (or of the nearest parent that has one).

const PALETTE = [
  '#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7',
  '#9c755f', '#3b8ea5', '#8cd17d', '#d37295', '#a0cbe8', '#ffbe7d', '#86bcb6', '#f1ce63',
];

/** A palette colour chosen by a hash of `name`. */
export function colorFor(name) {
  let hash = 2166136261;
  const s = String(name);
  for (let i = 0; i < s.length; i += 1) {
    hash ^= s.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  return PALETTE[(hash >>> 0) % PALETTE.length];
}

/**
 * Whether `color` (from the settings, which any API client may write) is a plain CSS colour:
 * hex, a name, or rgb()/hsl() of numbers. Anything else (`url(…)` would make the page fetch
 * it) is not used.
 */
export function plainColor(color) {
  return typeof color === 'string' && /^(#[0-9a-f]{3,8}|[a-z]{3,30}|(rgb|hsl)a?\([0-9.,%\s/deg]+\))$/i.test(color.trim());
}

/** The colour of category `names` (a list) under `classes`. */
export function categoryColor(classes, names) {
  const key = (n) => JSON.stringify(n);
  const byName = new Map((classes || []).filter((c) => c && c.data && plainColor(c.data.color)).map((c) => [key(c.name), c.data.color]));
  for (let depth = names.length; depth > 0; depth -= 1) {
    const c = byName.get(key(names.slice(0, depth)));
    if (c) return c;
  }
  if (names.length === 1 && names[0] === 'Uncategorized') return '#9aa0a6';
  return colorFor(names[0]);
}

/** Colours of AFK statuses. */
export const STATUS_COLORS = { 'not-afk': '#3fb950', afk: '#c9d1d9' };
