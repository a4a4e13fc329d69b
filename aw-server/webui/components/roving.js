// Arrow keys inside a group of many small controls (a year's days in the heat map, the bars
// of a period's chart): the group is one Tab stop, the arrows move between its items, Enter
// or Space picks one. A year of days as separate Tab stops would take 365 presses to pass.

/**
 * Makes `items` (elements, in order) one Tab stop starting at `start`. `step` maps a key to
 * the index change (`{ArrowLeft: -7, …}`); Home and End go to the first and last item.
 * `pick(item)` runs on Enter and Space (buttons already do that themselves: leave it out).
 */
export function roving(items, { start = items.length - 1, step, pick } = {}) {
  if (!items.length) return;
  let current = Math.max(0, Math.min(items.length - 1, start));
  items.forEach((el, i) => el.setAttribute('tabindex', i === current ? '0' : '-1'));
  const moveTo = (i) => {
    const next = Math.max(0, Math.min(items.length - 1, i));
    items[current].setAttribute('tabindex', '-1');
    items[next].setAttribute('tabindex', '0');
    items[next].focus();
    current = next;
  };
  items.forEach((el, i) => {
    el.addEventListener('focus', () => {
      // Focused by the pointer: that item is now the group's one Tab stop.
      items[current].setAttribute('tabindex', '-1');
      el.setAttribute('tabindex', '0');
      current = i;
    });
    el.addEventListener('keydown', (e) => {
      if (e.key === 'Home') moveTo(0);
      else if (e.key === 'End') moveTo(items.length - 1);
      else if (step && step[e.key] !== undefined) moveTo(current + step[e.key]);
      else if (pick && (e.key === 'Enter' || e.key === ' ')) pick(el);
      else return;
      e.preventDefault();
    });
  });
}
