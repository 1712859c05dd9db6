/**
 * A server-paged comparison table: sortable headers (server side), a name filter, a minimum
 * |diff| filter, page size and pager, baseline-only / target-only marking, tree rows
 * (module view: depth/path with expand/collapse by path prefix) and call stacks on demand.
 */
import {Stale} from "./api";
import {h, nextId, replace} from "./dom";
import {fmtCell, fmtCount, fmtNum, isDiffKey, isNum, UNIT, verdict} from "./format";
import {isStackKey, stackList} from "./source";
import type {TableQuery} from "./state";
import type {Column, Row, TablePage} from "./types";

export interface PagedTableOpts {
  label: string;
  query: TableQuery;
  tree: boolean;
  jump: boolean;
  diffUnit: string;
  fetchPage: (q: TableQuery) => Promise<TablePage>;
  onQuery: (q: TableQuery) => void;
}

const NUMERIC = new Set(["ms", "us", "count", "ratio", "bytes", "percent"]);
const HIDDEN = new Set(["status", "depth", "path"]);
export const PAGE_SIZES = [10, 25, 50, 100, 250, 500];

export function humanize(key: string): string {
  const t = key.replace(/_/g, " ").replace(/\bms\b/, "(ms)").replace(/\bmb\b/i, "(MB)").replace(/\bus\b/, "(µs)");
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function headerLabel(c: Column): string {
  const u = UNIT[c.type];
  if (!u || /\(|ms|µs|us\b|mb|kb|bytes/i.test(c.label)) return c.label;
  return `${c.label} (${u})`;
}

function cellClass(c: Column, v: unknown): string {
  const cls: string[] = [];
  if (NUMERIC.has(c.type) || (c.type !== "text" && isNum(v))) cls.push("num");
  if (isDiffKey(c.key) && c.type !== "ratio") cls.push(verdict(v, "diff"));
  else if (c.type === "ratio") cls.push(verdict(v, "ratio"));
  return cls.filter(Boolean).join(" ");
}

/** A static table (no paging) for small row sets, e.g. peak attribution. */
export function staticTable(columns: Column[], rows: Row[], label: string): HTMLElement {
  const table = h("table", {class: "t", "aria-label": label},
    h("thead", null, h("tr", null, ...columns.map((c) =>
      h("th", {class: NUMERIC.has(c.type) ? "num" : "", scope: "col"}, headerLabel(c))))),
    h("tbody", null, ...rows.map((r) => h("tr", null, ...columns.map((c) =>
      h("td", {class: cellClass(c, r[c.key]) + (c.type === "text" ? " name" : "")}, fmtCell(c, r[c.key])))))));
  return h("div", {class: "tbl-wrap"}, table);
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
  const collapsed = new Set<string>();
  const openStacks = new Set<string>();
  const statusEl = h("div", {class: "readout", role: "status"});
  const wrap = h("div", {class: "tbl-wrap"});
  const summaryEl = h("div", {class: "summary"});
  const pageLabel = h("span", {class: "muted", "aria-live": "polite"});
  const prev = h("button", {class: "btn", type: "button", "aria-label": "Previous page"}, "‹ Prev");
  const next = h("button", {class: "btn", type: "button", "aria-label": "Next page"}, "Next ›");
  const firstBtn = h("button", {class: "btn", type: "button", "aria-label": "First page"}, "«");

  async function reload(): Promise<void> {
    const my = ++seq;
    statusEl.textContent = "Loading…";
    try {
      const p = await opts.fetchPage(q);
      if (my !== seq) return;
      page = p;
      statusEl.textContent = "";
      draw();
    } catch (e) {
      if (e instanceof Stale || my !== seq) return;
      statusEl.textContent = "";
      replace(statusEl, h("span", {class: "err-text"}, `Could not load this page: ${(e as Error).message}`));
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
                             "aria-label": `Filter ${opts.label} by name`, style: {width: "220px"}});
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
  const minDiff = h("input", {type: "number", min: "0", step: "any", value: q.minDiff, placeholder: "0",
                              "aria-label": `Minimum absolute difference (${opts.diffUnit})`, style: {width: "110px"}});
  minDiff.addEventListener("change", () => setQ({minDiff: minDiff.value.trim()}));
  const size = h("select", {"aria-label": "Rows per page"}) as HTMLSelectElement;
  const sizes = PAGE_SIZES.includes(q.limit) ? PAGE_SIZES : [...PAGE_SIZES, q.limit].sort((a, b) => a - b);
  for (const n of sizes) size.append(h("option", {value: String(n)}, `Top ${n}`));
  size.value = String(q.limit);
  size.addEventListener("change", () => setQ({limit: Number(size.value)}));
  prev.addEventListener("click", () => setQ({offset: Math.max(0, q.offset - q.limit)}));
  next.addEventListener("click", () => setQ({offset: q.offset + q.limit}));
  firstBtn.addEventListener("click", () => setQ({offset: 0}));

  const treeTools = opts.tree ? h("div", {class: "pager"},
    h("button", {class: "btn", type: "button", onClick: () => { collapsed.clear(); draw(); }}, "Expand all"),
    h("button", {class: "btn", type: "button", onClick: () => {
      for (const [i, r] of page.rows.entries()) if (hasKids(i)) collapsed.add(rowKey(r, i));
      draw();
    }}, "Collapse all")) : null;

  const toolbar = h("div", {class: "toolbar"},
    h("label", {class: "field", for: searchId}, h("span", {class: "field-label"}, "Search"), search),
    h("label", {class: "field"}, h("span", {class: "field-label"}, "Min |diff| ",
                                   h("span", {class: "unit"}, `(${opts.diffUnit})`)), minDiff),
    h("label", {class: "field"}, h("span", {class: "field-label"}, "Show"), size),
    treeTools, h("div", {class: "grow"}),
    h("div", {class: "pager"}, firstBtn, prev, pageLabel, next));

  const rowKey = (r: Row, i: number) => (typeof r.path === "string" ? r.path : `#${page.offset}:${i}`);
  const depth = (r: Row | undefined) => (r && isNum(r.depth) ? r.depth : 0);
  const hasKids = (i: number) => i + 1 < page.rows.length && depth(page.rows[i + 1]) > depth(page.rows[i]);

  function hiddenRows(): boolean[] {
    const out: boolean[] = [];
    let hideBelow = Infinity;
    page.rows.forEach((r, i) => {
      const d = depth(r);
      if (d <= hideBelow) hideBelow = Infinity;
      const p = typeof r.path === "string" ? r.path : null;
      let hidden = hideBelow !== Infinity;
      if (!hidden && p) for (const c of collapsed) if (c.startsWith("#") === false && p.startsWith(c + "/")) hidden = true;
      out.push(hidden);
      if (!hidden && collapsed.has(rowKey(r, i)) && hideBelow === Infinity) hideBelow = d;
    });
    return out;
  }

  function draw(): void {
    const cols = page.columns.filter((c) => !HIDDEN.has(c.key) && !isStackKey(c.key));
    const stackKeys: string[] = [];
    for (const r of page.rows) for (const k of Object.keys(r)) if (isStackKey(k) && !stackKeys.includes(k)) stackKeys.push(k);
    const nameCol = cols.find((c) => c.type === "text")?.key ?? cols[0]?.key;
    const head = h("tr", null, ...cols.map((c) => {
      const sorted = q.sort === c.key ? (q.order === "asc" ? "ascending" : "descending") : "none";
      const btn = h("button", {class: "sort", type: "button", title: `Sort by ${c.label}`,
                               onClick: () => setQ(q.sort === c.key
                                 ? {order: q.order === "asc" ? "desc" : "asc"}
                                 : {sort: c.key, order: c.type === "text" ? "asc" : "desc"})},
                    headerLabel(c), h("span", {class: "arrow", "aria-hidden": "true"},
                                      sorted === "ascending" ? "▲" : sorted === "descending" ? "▼" : "↕"));
      return h("th", {class: NUMERIC.has(c.type) ? "num" : "", scope: "col", "aria-sort": sorted}, btn);
    }), stackKeys.length ? h("th", {scope: "col"}, "Call stack") : null);

    const tree = opts.tree && !q.sort && !q.q;          // a sorted or filtered page is a flat list
    const hidden = tree ? hiddenRows() : [];
    const body = h("tbody");
    page.rows.forEach((r, i) => {
      if (hidden[i]) return;
      const st = String(r.status ?? "both");
      const tr = h("tr", {class: st === "baseline_only" ? "only-baseline" : st === "target_only" ? "only-target" : ""});
      for (const c of cols) {
        const v = r[c.key];
        const td = h("td", {class: cellClass(c, v) + (c.key === nameCol ? " name" : c.type === "text" ? " text" : "")});
        if (c.key === nameCol) {
          if (tree) {
            td.style.paddingLeft = `${8 + depth(r) * 16}px`;
            const key = rowKey(r, i);
            if (hasKids(i)) {
              const open = !collapsed.has(key);
              td.append(h("button", {class: "tog", type: "button", "aria-expanded": String(open),
                                     "aria-label": `${open ? "Collapse" : "Expand"} ${String(v ?? "")}`,
                                     onClick: () => { if (open) collapsed.add(key); else collapsed.delete(key); draw(); }},
                          open ? "▾" : "▸"));
            } else td.append(h("span", {class: "tog", "aria-hidden": "true"}, ""));
          }
          td.append(h("span", {class: "label"}, fmtCell(c, v)));
          if (st === "baseline_only") td.append(h("span", {class: "badge baseline_only"}, "baseline only"));
          if (st === "target_only") td.append(h("span", {class: "badge target_only"}, "target only"));
        } else td.textContent = fmtCell(c, v);
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
            detail = h("tr", {class: "detail"}, h("td", {colspan: String(cols.length + 1)},
              ...present.map((k) => h("div", null, h("div", {class: "stack-title"}, humanize(k)),
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
    replace(wrap, h("table", {class: "t", "aria-label": opts.label}, h("thead", null, head), body));
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
