/**
 * A select for long lists (thousands of runs, or of ranks in one run) with a type-to-filter box:
 * the box narrows the options to those holding every typed word (any case), at most SHOWN are
 * listed (the chosen one always, a last line says how many more match), and Enter in the box
 * picks the first match. Short lists get no box.
 */
import {h} from "./dom";
import {fmtCount, shortMiddle} from "./format";

export interface PickOption {
  value: string;
  full: string;            // what is shown (shortened in the middle) and matched against
  disabled?: boolean;
}

/** Lists of this many options or more get a filter box. */
export const FILTER_FROM = 12;
/** Options listed at once: a select of thousands is slow to open and useless to scroll. */
export const SHOWN = 200;

export function matches(text: string, query: string): boolean {
  const t = text.toLowerCase();
  return query.toLowerCase().split(/\s+/).filter(Boolean).every((w) => t.includes(w));
}

function option(o: PickOption, n: number): HTMLOptionElement {
  return h("option", {value: o.value, title: o.full, disabled: !!o.disabled}, shortMiddle(o.full, n)) as HTMLOptionElement;
}

export interface FilterPick {
  box: HTMLInputElement | null;      // null for short lists
  count: HTMLElement | null;
  /** Fill the select for the box's text; the number of matching options. */
  refill(): number;
  /** The first matching option that can be chosen. */
  first(): PickOption | null;
}

/**
 * Wire ``sel`` (its options rebuilt here) to a filter box. ``head``: the first, empty-valued
 * option ("— choose a run —"), null for none; ``tail``: options kept whatever the filter (a missing choice);
 * ``query``/``onQuery``: the box's text, kept by the caller across redraws.
 */
export function filterPick(sel: HTMLSelectElement, opts: PickOption[], current: string, chars: number,
                           what: string, head: string | null, tail: PickOption[], query: string,
                           onQuery: (q: string) => void, role: string): FilterPick {
  const long = opts.length >= FILTER_FROM;
  const box = long ? h("input", {type: "search", class: "pick-filter", "data-role": role, value: query,
                                 placeholder: `Type to filter ${fmtCount(opts.length)} ${what}`,
                                 "aria-label": `Filter the ${what}`, autocomplete: "off", spellcheck: "false"}) as HTMLInputElement
                   : null;
  const count = long ? h("span", {class: "pick-count muted", "aria-live": "polite"}) : null;
  const found = (): PickOption[] => (box && box.value.trim() ? opts.filter((o) => matches(o.full, box.value)) : opts);

  const refill = (): number => {
    const hits = found();
    const shown = hits.slice(0, SHOWN);
    const chosen = current ? opts.find((o) => o.value === current) : undefined;
    sel.replaceChildren();
    if (head !== null) sel.append(h("option", {value: ""}, hits.length || !opts.length ? head : `— no ${what} match —`));
    if (chosen && !shown.includes(chosen)) sel.append(option(chosen, chars));
    for (const o of shown) sel.append(option(o, chars));
    if (hits.length > shown.length) {
      sel.append(h("option", {value: "", disabled: true, class: "pick-more"},
                   `… ${fmtCount(hits.length - shown.length)} more: type to narrow`));
    }
    for (const o of tail) sel.append(option(o, chars));
    sel.value = current;
    if (count) count.textContent = box && box.value.trim() ? `${fmtCount(hits.length)} of ${fmtCount(opts.length)}` : "";
    return hits.length;
  };
  const first = (): PickOption | null => found().find((o) => !o.disabled) ?? null;

  if (box) {
    box.addEventListener("input", () => {
      onQuery(box.value);
      refill();
    });
  }
  return {box, count, refill, first};
}
