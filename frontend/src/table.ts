/**
 * A server-paged comparison table: sortable headers (server side), a name filter, a minimum
 * |diff| filter, page size and pager, baseline-only / target-only marking, tree rows
 * (module view: depth/path with expand/collapse by path prefix) and call stacks on demand.
 */
import {Stale} from "./api";
import {h, nextId, replace} from "./dom";
import {cleanText, fmtCell, fmtCount, fmtNum, isDiffKey, isNum, shortMiddle, showsZero, UNIT, verdict} from "./format";
import {isStackKey, stackList} from "./source";
import {isOp, isTreeRows, nodeKey, treeLabel, treeOrder, treeView} from "./tree";
import type {TableQuery} from "./state";
import type {Column, Row, TablePage} from "./types";

export interface PagedTableOpts {
  label: string;
  query: TableQuery;
  tree: boolean;
  jump: boolean;
  diffUnit: string;
  diffLabel?: string;                // what min |…| filters on, e.g. "Compute Diff"
  fetchPage: (q: TableQuery) => Promise<TablePage>;
  onQuery: (q: TableQuery) => void;
  extra?: HTMLElement | null;        // put before the filters (e.g. the operator view's mode switch)
  rowAction?: (r: Row) => HTMLElement | null;   // after a row's name (the match editor's pair / split)
}

const NUMERIC = new Set(["ms", "us", "mb", "kb", "count", "ratio", "bytes", "percent", "number"]);
const HIDDEN = new Set(["status", "depth"]);
export const PAGE_SIZES = [10, 25, 50, 100, 250, 500];

export function humanize(key: string): string {
  const t = key.replace(/_/g, " ").replace(/\bms\b/, "(ms)").replace(/\bmb\b/i, "(MB)").replace(/\bus\b/, "(µs)");
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function stackTitle(key: string): string {
  return key.startsWith("b_") ? "Baseline call stack" : key.startsWith("t_") ? "Target call stack" : humanize(key);
}

function headerLabel(c: Column): string {
  const label = c.label.replace(/\(us\)/, "(µs)");
  const u = UNIT[c.type];
  if (!u || /\(|ms|µs|us\b|mb|kb|bytes/i.test(label)) return label;
  return `${label} (${u})`;
}

function cellClass(c: Column, v: unknown): string {
  const cls: string[] = [];
  if (NUMERIC.has(c.type) || (c.type !== "text" && isNum(v))) cls.push("num");
  if (isDiffKey(c.key) && c.type !== "ratio") {
    if (!showsZero(fmtCell(c, v))) cls.push(verdict(v, "diff"));     // shown as 0: neutral
  }
  else if (c.type === "ratio") cls.push(verdict(v, "ratio"));
  return cls.filter(Boolean).join(" ");
}

/** A static table (no paging) for small row sets, e.g. peak attribution. */
export function staticTable(columns: Column[], rows: Row[], label: string): HTMLElement {
  const cols = columns.filter((c) => !HIDDEN.has(c.key));
  const table = h("table", {class: "t", "aria-label": label},
    h("thead", null, h("tr", null, ...cols.map((c) =>
      h("th", {class: NUMERIC.has(c.type) ? "num" : "", scope: "col"}, headerLabel(c))))),
    h("tbody", null, ...rows.map((r) => h("tr", {class: statusClass(r)}, ...cols.map((c, j) =>
      h("td", {class: cellClass(c, r[c.key]) + (c.type === "text" ? (j === 0 ? " name" : " text") : "")},
        fmtCell(c, r[c.key]), j === 0 ? statusBadge(r) : null))))));
  return h("div", {class: "tbl-wrap"}, table);
}

/**
 * Text with line-break opportunities after ";" (between the tensors of a shape list), "::"
 * (C++ / torch scopes), "/" (module paths) and "#" (`Optimizer.step#AdamW.step`), so long names wrap there instead of widening
 * the table or breaking mid-word.
 */
/** Names longer than this (C++ template kernels) are shortened in the middle; the full name is the title. */
const LONG_NAME = 120;

/** A label span for a name: line breaks allowed after separators, a very long one shortened in the middle. */
function nameLabel(t: string): HTMLElement {
  return t.length > LONG_NAME ? h("span", {class: "label", title: t}, ...breakable(shortMiddle(t, LONG_NAME)))
    : h("span", {class: "label"}, ...breakable(t));
}

export function breakable(t: string): Array<string | HTMLElement> {
  const parts = t.split(/(?<=;|::|\/|#)/);
  if (parts.length < 2) return [t];
  return parts.flatMap((p, i) => (i < parts.length - 1 ? [p, h("wbr")] : [p]));
}

function statusClass(r: Row): string {
  return r.status === "baseline_only" ? "only-baseline" : r.status === "target_only" ? "only-target" : "";
}

function statusBadge(r: Row): HTMLElement | null {
  if (r.status === "baseline_only") return h("span", {class: "badge baseline_only"}, "baseline only");
  if (r.status === "target_only") return h("span", {class: "badge target_only"}, "target only");
  return null;
}

/** Columns guessed from row keys (for answers that carry no column list). */
export function autoColumns(rows: Row[]): Column[] {
  const keys: string[] = [];
  for (const r of rows.slice(0, 50)) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  return keys.filter((k) => !isStackKey(k) && typeof rows.find((r) => r[k] !== null && r[k] !== undefined)?.[k] !== "object")
    .map((k) => {
      const v = rows.find((r) => r[k] !== null && r[k] !== undefined)?.[k];
      const type = typeof v !== "number" ? "text" : /ratio/i.test(k) ? "ratio" : /_ms$|\(ms\)/i.test(k) ? "ms"
        : /_us$/i.test(k) ? "us" : /bytes/i.test(k) ? "bytes" : /count|calls|num/i.test(k) ? "count" : "number";
      return {key: k, label: humanize(k), type};
    });
}


export function pagedTable(opts: PagedTableOpts, first: TablePage): HTMLElement {
  let q: TableQuery = {...opts.query};
  let page = first;
  let seq = 0;
  let showOps = true;
  const collapsed = new Set<string>();
  const openStacks = new Set<string>();
  const statusEl = h("div", {class: "readout", role: "status"});
  const wrap = h("div", {class: "tbl-wrap"});
  const summaryEl = h("div", {class: "summary"});
  const pageLabel = h("span", {class: "muted", "aria-live": "polite", "data-role": "page-label"});
  const prev = h("button", {class: "btn", type: "button", "aria-label": "Previous page"}, "‹ Prev");
  const next = h("button", {class: "btn", type: "button", "aria-label": "Next page"}, "Next ›");
  const firstBtn = h("button", {class: "btn", type: "button", "aria-label": "First page"}, "«");
  const resetSort = h("button", {class: "btn", type: "button", "data-role": "default-order",
                                 title: opts.tree ? "Back to the tree" : "Back to the server's order (largest difference first)"},
                      opts.tree ? "Tree order" : "Default order");
  const treeTools = h("div", {class: "pager"});

  async function reload(): Promise<void> {
    const my = ++seq;
    statusEl.textContent = "Loading…";
    wrap.setAttribute("aria-busy", "true");
    try {
      const p = await opts.fetchPage(q);
      if (my !== seq) return;
      page = p;
      statusEl.textContent = "";
      draw();
      wrap.scrollTop = 0;                       // a new page (sort, filter, pager) starts at its top
    } catch (e) {
      if (e instanceof Stale || my !== seq) return;
      statusEl.textContent = "";
      replace(statusEl, h("span", {class: "err-text"}, `Could not load this page: ${(e as Error).message}`));
    } finally {
      if (my === seq) wrap.removeAttribute("aria-busy");
    }
  }

  function setQ(patch: Partial<TableQuery>): void {
    q = {...q, offset: 0, ...patch};
    opts.onQuery(q);
    void reload();
  }

  // toolbar
  const searchId = nextId("q");
  const search = h("input", {type: "search", id: searchId, placeholder: "name contains…", value: q.q,
                             "aria-label": `Filter ${opts.label} by name`, style: {width: "200px"}});
  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => setQ({q: search.value.trim()}), 350);
  });
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      clearTimeout(timer);
      setQ({q: search.value.trim()});
    }
  });
  const dl = opts.diffLabel || "diff";
  const minDiff = h("input", {type: "number", min: "0", step: "any", value: q.minDiff, placeholder: "0",
                              "aria-label": `Minimum absolute difference${opts.diffUnit ? ` (${opts.diffUnit})` : ""}`,
                              title: `Only rows whose |${dl}| is at least this`, style: {width: "100px"}});
  let minTimer = 0;
  const applyMin = () => {                       // as you type, like Search (debounced); Enter or leaving applies at once
    clearTimeout(minTimer);
    if (minDiff.value.trim() !== (q.minDiff ?? "")) setQ({minDiff: minDiff.value.trim()});
  };
  minDiff.addEventListener("input", () => {
    clearTimeout(minTimer);
    minTimer = window.setTimeout(applyMin, 350);
  });
  minDiff.addEventListener("change", applyMin);
  const size = h("select", {"aria-label": "Rows per page"}) as HTMLSelectElement;
  const sizes = PAGE_SIZES.includes(q.limit) ? PAGE_SIZES : [...PAGE_SIZES, q.limit].sort((a, b) => a - b);
  for (const n of sizes) size.append(h("option", {value: String(n)}, `Top ${n}`));
  size.value = String(q.limit);
  size.addEventListener("change", () => setQ({limit: Number(size.value)}));
  prev.addEventListener("click", () => setQ({offset: Math.max(0, q.offset - q.limit)}));
  next.addEventListener("click", () => setQ({offset: q.offset + q.limit}));
  firstBtn.addEventListener("click", () => setQ({offset: 0}));
  resetSort.addEventListener("click", () => setQ({sort: "", order: ""}));

  const toolbar = h("div", {class: "toolbar"}, opts.extra ?? null,
    h("label", {class: "field", for: searchId}, h("span", {class: "field-label"}, "Search"), search),
    h("label", {class: "field"}, h("span", {class: "field-label"}, `Min |${dl}| `,
                                   opts.diffUnit ? h("span", {class: "unit"}, `(${opts.diffUnit})`) : null), minDiff),
    h("label", {class: "field"}, h("span", {class: "field-label"}, "Show"), size),
    resetSort, treeTools, h("div", {class: "grow"}),
    h("div", {class: "pager"}, firstBtn, prev, pageLabel, next));

  const rowKey = (r: Row, i: number) => `${page.offset + i}:${String(r.path ?? "")}:${String(r.name ?? "")}`;

  function drawTreeTools(tree: boolean): void {
    if (!tree) {
      replace(treeTools);
      return;
    }
    const ops = h("input", {type: "checkbox", checked: showOps}) as HTMLInputElement;
    ops.addEventListener("change", () => { showOps = ops.checked; draw(); });
    replace(treeTools,
      h("button", {class: "btn", type: "button", onClick: () => { collapsed.clear(); draw(); }}, "Expand all"),
      h("button", {class: "btn", type: "button", onClick: () => {
        const all = treeOrder(page.rows);
        const tv = treeView(all, new Set(), showOps);
        all.forEach((r, i) => { const k = nodeKey(r); if (k !== null && tv.hasKids[i]) collapsed.add(k); });
        draw();
      }}, "Collapse all"),
      h("label", {class: "check"}, ops, " operators"));
  }

  /** The first column's content: tree label with toggle, full path when flat, or the value. */
  function nameCell(td: HTMLElement, c: Column, r: Row, tree: boolean, tv: ReturnType<typeof treeView> | null, i: number): void {
    const v = r[c.key];
    if (tree && tv) {
      td.style.paddingLeft = `${8 + (Number(r.depth ?? 0) + (isOp(r) ? 1 : 0) - tv.base) * 16}px`;
      const key = nodeKey(r);
      if (key !== null && tv.hasKids[i]) {
        const open = !collapsed.has(key);
        td.append(h("button", {class: "tog", type: "button", "aria-expanded": String(open),
                               "aria-label": `${open ? "Collapse" : "Expand"} ${treeLabel(r)}`,
                               onClick: () => { if (open) collapsed.add(key); else collapsed.delete(key); draw(); }},
                    open ? "▾" : "▸"));
      } else td.append(h("span", {class: "tog", "aria-hidden": "true"}, ""));
      td.append(h("span", {class: "label", title: String(r.path ?? "") + (r.virtual ? " (groups the rows under it; no figures of its own)" : "")},
                  ...breakable(treeLabel(r))));
    } else if (c.key === "path" && typeof r.path === "string") {
      if (isOp(r)) {
        td.append(nameLabel(cleanText(r.name)),
                  h("span", {class: "where muted"}, " in ", ...breakable(r.path)));
      } else td.append(h("span", {class: "label"}, ...breakable(r.path)));
    } else {
      td.append(nameLabel(fmtCell(c, v)));
    }
    const badge = statusBadge(r);
    if (badge) td.append(badge);
    const act = opts.rowAction?.(r);
    if (act) td.append(act);
  }

  function draw(): void {
    const cols = page.columns.filter((c) => !HIDDEN.has(c.key) && !isStackKey(c.key));
    const stackKeys: string[] = [];
    for (const r of page.rows) for (const k of Object.keys(r)) if (isStackKey(k) && !stackKeys.includes(k)) stackKeys.push(k);
    const nameCol = cols.find((c) => c.type === "text")?.key ?? cols[0]?.key;
    // the order shown: the user's, else the server's default when it says which
    const curSort = q.sort || (typeof page.sort === "string" ? page.sort : "");
    const curOrder = q.sort ? q.order : page.order === "asc" ? "asc" : "desc";
    const head = h("tr", null, ...cols.map((c) => {
      const sorted = curSort === c.key ? (curOrder === "asc" ? "ascending" : "descending") : "none";
      const btn = h("button", {class: "sort", type: "button", title: `Sort by ${c.label}`, "data-key": c.key,
                               onClick: () => setQ(curSort === c.key
                                 ? {sort: c.key, order: curOrder === "asc" ? "desc" : "asc"}
                                 : {sort: c.key, order: c.type === "text" ? "asc" : "desc"})},
                    headerLabel(c), h("span", {class: "arrow", "aria-hidden": "true"},
                                      sorted === "ascending" ? "▲" : sorted === "descending" ? "▼" : "↕"));
      return h("th", {class: (NUMERIC.has(c.type) ? "num" : "") + (c.key === nameCol ? " name" : ""),
                      scope: "col", "aria-sort": sorted}, btn);
    }), stackKeys.length ? h("th", {scope: "col"}, "Call stack") : null);

    const tree = opts.tree && !q.sort && !q.q && isTreeRows(page.rows);   // sorted or filtered: a flat list
    const rows = tree ? treeOrder(page.rows) : page.rows;
    const tv = tree ? treeView(rows, collapsed, showOps) : null;
    drawTreeTools(tree);
    resetSort.hidden = !q.sort;
    const body = h("tbody");
    rows.forEach((r, i) => {
      if (tv?.hidden[i]) return;
      const tr = h("tr", {class: [statusClass(r), isOp(r) && opts.tree ? "kind-op" : "", r.virtual ? "virtual" : ""]
                                 .filter(Boolean).join(" ")});
      for (const c of cols) {
        const v = r[c.key];
        const td = h("td", {class: cellClass(c, v) + (c.key === nameCol ? " name" : c.type === "text" ? " text" : "")});
        if (c.key === nameCol) nameCell(td, c, r, tree, tv, i);
        else if (c.type === "text") td.append(...breakable(fmtCell(c, v)));
        else td.textContent = fmtCell(c, v);
        tr.append(td);
      }
      let detail: HTMLTableRowElement | null = null;
      if (stackKeys.length) {
        const present = stackKeys.filter((k) => typeof r[k] === "string" && (r[k] as string).trim());
        const key = rowKey(r, i);
        const td = h("td");
        if (present.length) {
          const open = openStacks.has(key);
          td.append(h("button", {class: "btn small", type: "button", "aria-expanded": String(open),
                                 onClick: () => { if (open) openStacks.delete(key); else openStacks.add(key); draw(); }},
                      open ? "Hide" : "Show"));
          if (open) {
            const same = present.length === 2 && String(r[present[0]]).trim() === String(r[present[1]]).trim();
            const shown = same ? [present[0]] : present;
            detail = h("tr", {class: "detail"}, h("td", {colspan: String(cols.length + 1)},
              ...shown.map((k) => h("div", null, h("div", {class: "stack-title"}, same ? "Call stack (the same on both sides)" : stackTitle(k)),
                                     stackList(String(r[k]), opts.jump)))));
          }
        }
        tr.append(td);
      }
      body.append(tr);
      if (detail) body.append(detail);
    });
    if (!page.rows.length) {
      body.append(h("tr", null, h("td", {colspan: String(cols.length + (stackKeys.length ? 1 : 0)), class: "muted"},
                                   q.q || q.minDiff ? "No rows match the filters." : "No rows.")));
    }
    const cls = "t" + (tree ? " tree" : "") + (cols.length + (stackKeys.length ? 1 : 0) > 8 ? " dense" : "");
    replace(wrap, h("table", {class: cls, "aria-label": opts.label}, h("thead", null, head), body));
    const from = page.total ? page.offset + 1 : 0;
    const unf = page.total_unfiltered;
    pageLabel.textContent = `${fmtCount(from)}–${fmtCount(page.offset + page.rows.length)} of ${fmtCount(page.total)}`
      + (isNum(unf) && unf > page.total ? ` (filtered from ${fmtCount(unf)})` : "");
    prev.disabled = firstBtn.disabled = page.offset <= 0;
    next.disabled = page.offset + page.rows.length >= page.total;
    const sm = page.summary && typeof page.summary === "object" ? Object.entries(page.summary) : [];
    replace(summaryEl, ...sm.filter(([, v]) => v === null || typeof v !== "object").map(([k, v]) =>
      h("span", null, `${humanize(k)}: `, h("b", null, isNum(v) ? (Number.isInteger(v) ? fmtCount(v) : fmtNum(v)) : String(v ?? "—")))));
  }

  draw();
  return h("div", {class: "paged"}, toolbar, summaryEl, statusEl, wrap);
}
