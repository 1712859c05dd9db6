/**
 * The Cluster view: every rank of the baseline's run (route `cluster?run=RUN[&against=RUN2]`,
 * docs/cluster.md): the parallel-strategy hints, slow ranks and slow links with their reasons,
 * a stacked bar per rank and the src x dst link heatmap (clustercharts.ts, canvas), the
 * sortable paged ranks x metrics table, per-collective wait/transmit per rank, and — when the
 * target picker is on another run with several workers — that run against this one (per-rank
 * and aggregate differences, slowest rank each side, the phase that regressed). Clicking a rank
 * (bar, table row, slow-rank finding, difference row) opens its worker in the pair views.
 * It appears only when the baseline's (or target's) run has two or more workers.
 */
import {postReady, Stale, url} from "./api";
import {linkHeatmap, type LinkCell, rankBars, type RankBar} from "./clustercharts";
import {h, replace} from "./dom";
import {fmtNum, fmtSigned, isNum, showsZero, verdict} from "./format";
import type {ViewCtx, ViewDef} from "./registry";
import {runOf, type SideSel} from "./state";
import type {Run, RunsResponse} from "./types";
import {failure, progressBox} from "./views";

type Num = number | null | undefined;

interface RankRow {
  rank: number;
  worker: string;
  step: number | null;
  [k: string]: unknown;
}

interface SlowRank {
  rank: number;
  metric: string;
  value_ms: Num;
  median_ms: Num;
  score: Num;
  method?: string;
  phase?: string | null;
  reason: string;
}

interface SlowLink extends LinkCell {
  median_gbps?: Num;
  ratio?: Num;
  slow_collectives?: number;
  collectives?: number;
}

interface Collective {
  rank: number;
  step: number | null;
  collective: string;
  op_type?: string;
  group?: string;
  elapse_ms?: Num;
  wait_ms?: Num;
  transmit_ms?: Num;
  synchronization_ms?: Num;
  idle_ms?: Num;
  cluster_wait_ms?: Num;
  waited_for?: boolean;
  size_mb?: Num;
}

interface DiffRow {
  scope: string;              // "rank" | "median" | "max"
  rank?: number | null;
  base_worker?: string | null;
  target_worker?: string | null;
  [k: string]: unknown;
}

interface Slowest {
  rank: number;
  step_time_ms?: Num;
  busy_ms?: Num;
}

interface DiffSummary {
  base_ranks?: number;
  target_ranks?: number;
  slowest_base?: Slowest | null;
  slowest_target?: Slowest | null;
  step_time_diff_ms?: Num;
  phase_regressed?: string | null;
  phase_regressed_ms?: Num;
  only_base_ranks?: number[];
  only_target_ranks?: number[];
}

export interface ClusterAnswer {
  run: string;
  ranks: RankRow[];
  slow_ranks?: SlowRank[];
  slow_links?: SlowLink[];
  link_pairs?: LinkCell[];
  collectives?: Collective[];
  hints?: string[];
  against?: ClusterAnswer | null;
  diff?: DiffRow[] | null;
  diff_summary?: DiffSummary | null;
  summary?: {rank_count?: number; steps?: number[]; slowest_rank?: Slowest & {median_step_time_ms?: Num} | null};
  warnings?: string[];
  errors?: Array<{worker?: string; rank?: number; error?: string}>;
}

/** The table's metrics in the reference's column order: key (without `_ms`), label. */
export const METRICS: ReadonlyArray<[string, string]> = [
  ["step_time", "Step time"], ["computing", "Computing"], ["communication_not_overlapped", "Comm. not overlapped"],
  ["overlapped", "Overlapped"], ["communication", "Communication"], ["free", "Free"], ["wait", "Wait"],
  ["transmit", "Transmit"], ["preparing", "Preparing"], ["bubble", "Bubble"]];
const LABEL = new Map(METRICS);
const PAGE = 50;

// -- which runs ---------------------------------------------------------------------------------

let knownRuns: RunsResponse | null = null;

function runNamed(name: string): Run | undefined {
  return knownRuns?.runs.find((r) => r.name === name);
}

/** Whether a run has two or more workers (the server's `cluster` flag when it sends one). */
export function isClusterRun(name: string): boolean {
  const r = runNamed(name) as (Run & {cluster?: boolean; workers_count?: number}) | undefined;
  if (!r) return false;
  if (typeof r.cluster === "boolean") return r.cluster;
  return (isNum(r.workers_count) ? r.workers_count : r.workers?.length ?? 0) >= 2;
}

/** The cluster run shown and the run it is compared against, from the pickers (null: no cluster). */
export function clusterRuns(base: SideSel | null, target: SideSel | null, solo: boolean): {run: string; against: string | null} | null {
  const b = base ? runOf(base.worker) : null, t = target ? runOf(target.worker) : null;
  const run = b && isClusterRun(b) ? b : t && isClusterRun(t) ? t : null;
  if (!run) return null;
  const against = !solo && b && t && b !== t && run === b && isClusterRun(t) ? t : null;
  return {run, against};
}

function workerId(run: string, worker: string): string {
  return `${run}/${worker}`;
}

// -- small pieces -----------------------------------------------------------------------------

function mean(vs: Num[]): number | null {
  const xs = vs.filter(isNum);
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

/** One row per rank: the mean of each metric over the rank's steps (or the chosen step's row). */
function perRank(rows: RankRow[], step: number | null): RankRow[] {
  const by = new Map<number, RankRow[]>();
  for (const r of rows) {
    if (step !== null && r.step !== step) continue;
    const l = by.get(r.rank);
    if (l) l.push(r); else by.set(r.rank, [r]);
  }
  const out: RankRow[] = [];
  for (const [rank, rs] of by) {
    const row: RankRow = {rank, worker: rs[0].worker, step: rs.length === 1 ? rs[0].step : null, steps: rs.length};
    for (const [m] of METRICS) row[`${m}_ms`] = mean(rs.map((x) => x[`${m}_ms`] as Num));
    out.push(row);
  }
  return out.sort((a, b) => a.rank - b.rank);
}

function slowByRank(slow: SlowRank[]): Map<number, SlowRank[]> {
  const m = new Map<number, SlowRank[]>();
  for (const s of slow) {
    const l = m.get(s.rank);
    if (l) l.push(s); else m.set(s.rank, [s]);
  }
  return m;
}

function pager(total: number, offset: number, limit: number, go: (off: number) => void, what: string): HTMLElement {
  const last = Math.max(0, Math.floor((total - 1) / limit) * limit);
  return h("div", {class: "pager", "data-role": `${what}-pager`},
    h("button", {class: "btn small", type: "button", disabled: offset <= 0, "aria-label": `Previous ${what} page`, onClick: () => go(Math.max(0, offset - limit))}, "‹"),
    h("span", {class: "muted"}, total ? `${offset + 1}–${Math.min(total, offset + limit)} of ${total}` : "none"),
    h("button", {class: "btn small", type: "button", disabled: offset >= last, "aria-label": `Next ${what} page`, onClick: () => go(Math.min(last, offset + limit))}, "›"));
}

interface SortState {
  key: string;
  desc: boolean;
}

/** A client-side sortable, paged table of plain rows. */
function sortedTable<T extends Record<string, unknown>>(o: {
  label: string; role: string; rows: T[]; cols: ReadonlyArray<[string, string, "num" | "diff" | "text"]>; sort: SortState;
  onSort?(s: SortState): void; rowAttrs(r: T): Record<string, unknown>; cell?(r: T, key: string): HTMLElement | null; limit?: number;
}): HTMLElement {
  const wrap = h("div", {class: "cl-table", "data-role": o.role});
  let sort = o.sort, offset = 0;
  const limit = o.limit ?? PAGE;
  const draw = () => {
    const rows = [...o.rows];
    if (sort.key) {
      rows.sort((a, b) => {
        const x = a[sort.key], y = b[sort.key];
        const c = isNum(x) && isNum(y) ? x - y : isNum(x) ? 1 : isNum(y) ? -1 : String(x ?? "").localeCompare(String(y ?? ""));
        return sort.desc ? -c : c;
      });
    }
    const page = rows.slice(offset, offset + limit);
    const head = h("tr", null, ...o.cols.map(([k, label, kind]) => {
      const on = sort.key === k;
      return h("th", {scope: "col", class: kind === "text" ? "" : "num", "aria-sort": on ? (sort.desc ? "descending" : "ascending") : "none"},
        h("button", {class: "sort", type: "button", "data-sort": k, onClick: () => {
          sort = {key: k, desc: on ? !sort.desc : kind !== "text"};
          offset = 0;
          o.onSort?.(sort);
          draw();
          (wrap.querySelector(`button[data-sort="${k}"]`) as HTMLElement | null)?.focus();
        }}, label, on ? (sort.desc ? " ▼" : " ▲") : ""));
    }));
    const body = h("tbody", null, ...page.map((r) => h("tr", o.rowAttrs(r), ...o.cols.map(([k, , kind]) => {
      const own = o.cell?.(r, k);
      if (own) return own;
      const v = r[k];
      if (kind === "text") return h("td", null, v === null || v === undefined ? "—" : String(v));
      const t = kind === "diff" ? fmtSigned(v) : fmtNum(v);
      return h("td", {class: "num " + (kind === "diff" && !showsZero(t) ? verdict(v, "diff") : "")}, t);
    }))));
    replace(wrap, h("div", {class: "tbl-wrap"}, h("table", {class: "t dense", "aria-label": o.label}, h("thead", null, head), body)),
      rows.length > limit ? pager(rows.length, offset, limit, (off) => { offset = off; draw(); }, o.role) : null);
  };
  draw();
  return wrap;
}

function rankButton(rank: number, label: string, open: (rank: number) => void, worker?: string): HTMLElement {
  return h("button", {class: "linkish cl-rank", type: "button", "data-rank": String(rank),
                      title: `Open rank ${rank}${worker ? ` (${worker})` : ""} in the pair views`,
                      onClick: () => open(rank)}, label);
}

// -- sections ---------------------------------------------------------------------------------

function findings(data: ClusterAnswer, open: (rank: number) => void, openLink: (s: number, d: number) => void): HTMLElement {
  const slow = data.slow_ranks ?? [], links = data.slow_links ?? [];
  return h("div", {class: "grid2 cl-findings"},
    h("section", {class: "panel", "data-role": "slow-ranks", "aria-label": "Slow ranks"},
      h("h3", null, `Slow ranks (${slow.length})`),
      slow.length ? h("ul", {class: "cl-list"}, ...slow.map((s) => h("li", {class: "worse", "data-rank": String(s.rank), "data-metric": s.metric},
        rankButton(s.rank, `Rank ${s.rank}`, open), ` — ${LABEL.get(s.metric) ?? s.metric}`,
        s.phase ? h("span", {class: "badge"}, `loses in ${s.phase}`) : null,
        h("div", {class: "cl-reason"}, s.reason))))
        : h("p", {class: "muted"}, "No slow rank: no rank is an outlier on any metric (see docs/cluster.md for the tests).")),
    h("section", {class: "panel", "data-role": "slow-links", "aria-label": "Slow links"},
      h("h3", null, `Slow links (${links.length})`),
      links.length ? h("ul", {class: "cl-list"}, ...links.map((l) => h("li", {class: "worse", "data-link": `${l.src_rank}-${l.dst_rank}`},
        h("button", {class: "linkish", type: "button", onClick: () => openLink(l.src_rank, l.dst_rank),
                     title: `Open ranks ${l.src_rank} and ${l.dst_rank} in the pair views`}, `${l.src_rank} → ${l.dst_rank}`),
        ` (${l.transport}) ${fmtNum(l.bandwidth_gbps)} GB/s`, h("div", {class: "cl-reason"}, l.reason ?? ""))))
        : h("p", {class: "muted"}, "No slow link: every link is within half its peers' median bandwidth.")));
}

function rankTable(rows: RankRow[], slow: Map<number, SlowRank[]>, ctx: ViewCtx, open: (rank: number) => void): HTMLElement {
  const q = ctx.query;
  // the worker is the rank button's title: ten metrics and the rank fit a 1,280 px frame without scrolling
  const cols: Array<[string, string, "num" | "diff" | "text"]> = [["rank", "Rank", "num"],
    ...METRICS.map(([m, l]) => [`${m}_ms`, `${l} (ms)`, "num"] as [string, string, "num"])];
  return sortedTable({
    label: "Ranks by metric (ms per step)", role: "rank-table", rows, cols,
    sort: {key: q.sort && cols.some(([k]) => k === q.sort) ? q.sort : "rank", desc: q.sort ? q.order !== "asc" : false},
    onSort: (s) => ctx.onQuery({...q, sort: s.key, order: s.desc ? "desc" : "asc"}, false),
    rowAttrs: (r) => {
      const f = slow.get(r.rank);
      return {class: f ? "cl-slow" : "", "data-rank": String(r.rank), title: f ? f.map((x) => x.reason).join("\n") : null};
    },
    cell: (r, k) => {
      if (k === "rank") {
        const f = slow.get(r.rank);
        return h("td", {class: "num", "data-worker": r.worker}, rankButton(r.rank, String(r.rank), open, r.worker),
                 f ? h("span", {class: "badge slow", title: f.map((x) => x.reason).join("\n")}, "slow") : null);
      }
      const f = slow.get(r.rank)?.find((x) => `${x.metric}_ms` === k);
      if (f) return h("td", {class: "num worse cl-flag", title: f.reason, "data-flag": f.metric}, fmtNum(r[k]));
      return null;
    },
  });
}

function collectiveSection(data: ClusterAnswer, open: (rank: number) => void): HTMLElement | null {
  const rows = data.collectives ?? [];
  if (!rows.length) return null;
  const names = [...new Set(rows.map((r) => r.collective))];
  const pick = h("select", {"aria-label": "Collective", "data-role": "collective-pick"},
    h("option", {value: ""}, `All collectives (sum per rank, ${names.length})`), ...names.map((n) => h("option", {value: n}, n)));
  const host = h("div");
  const cols: Array<[string, string, "num" | "diff" | "text"]> = [["rank", "Rank", "num"], ["collective", "Collective", "text"],
    ["step", "Step", "num"], ["elapse_ms", "Elapse (ms)", "num"], ["wait_ms", "Wait (ms)", "num"], ["transmit_ms", "Transmit (ms)", "num"],
    ["cluster_wait_ms", "Cross-rank wait (ms)", "num"], ["synchronization_ms", "Synchronization (ms)", "num"], ["size_mb", "Size (MB)", "num"],
    ["waited_for", "Others waited for it", "text"]];
  const draw = () => {
    const name = pick.value;
    let shown: Array<Record<string, unknown>>;
    if (name) shown = rows.filter((r) => r.collective === name).map((r) => ({...r, waited_for: r.waited_for ? "yes" : ""}));
    else {
      const by = new Map<number, Record<string, unknown>>();
      for (const r of rows) {
        const a = by.get(r.rank) ?? {rank: r.rank, collective: "all", step: null, elapse_ms: 0, wait_ms: 0, transmit_ms: 0, cluster_wait_ms: 0,
                                     synchronization_ms: 0, size_mb: 0, waited_for: 0};
        for (const k of ["elapse_ms", "wait_ms", "transmit_ms", "cluster_wait_ms", "synchronization_ms", "size_mb"]) {
          const v = (r as unknown as Record<string, unknown>)[k];
          if (isNum(v)) a[k] = (a[k] as number) + v;
        }
        if (r.waited_for) a.waited_for = (a.waited_for as number) + 1;
        by.set(r.rank, a);
      }
      shown = [...by.values()].map((a) => ({...a, waited_for: a.waited_for ? `${a.waited_for}×` : ""}));
    }
    replace(host, sortedTable({label: "Per-collective wait and transmit per rank", role: "collective-table", rows: shown, cols,
      sort: {key: "wait_ms", desc: true}, rowAttrs: (r) => ({"data-rank": String(r.rank)}),
      cell: (r, k) => k === "rank" ? h("td", {class: "num"}, rankButton(r.rank as number, String(r.rank), open)) : null}));
  };
  pick.addEventListener("change", draw);
  draw();
  return h("section", {"data-role": "collectives"}, h("h2", null, "Collectives: wait and transmit per rank"),
    h("p", {class: "muted intro"}, "Wait and transmit as the profiler wrote them; cross-rank wait = this rank's elapse minus the collective's shortest elapse among the ranks (the rank the others waited for has none). ",
      h("label", null, "Show ", pick)), host);
}

function diffSection(data: ClusterAnswer, ctx: ViewCtx, openPair: (b: string | null, t: string | null, rank: number | null) => void): HTMLElement | null {
  const ag = data.against, rows = data.diff ?? [], sum = data.diff_summary;
  if (!ag || !rows.length) return null;
  const agg = rows.filter((r) => r.scope !== "rank"), per = rows.filter((r) => r.scope === "rank");
  const slowest = (s: Slowest | null | undefined) => s ? `rank ${s.rank} (${fmtNum(s.step_time_ms)} ms per step)` : "—";
  const d = sum?.step_time_diff_ms;
  const cards = h("dl", {class: "cl-cards", "data-role": "diff-summary"},
    h("div", null, h("dt", null, "Ranks"), h("dd", null, `${sum?.base_ranks ?? "?"} → ${sum?.target_ranks ?? "?"}`)),
    h("div", null, h("dt", null, "Slowest rank, baseline"), h("dd", {"data-role": "slowest-base"}, slowest(sum?.slowest_base))),
    h("div", null, h("dt", null, "Slowest rank, target"), h("dd", {"data-role": "slowest-target"}, slowest(sum?.slowest_target))),
    h("div", null, h("dt", null, "Median step time"), h("dd", {class: verdict(d, "diff"), "data-role": "step-diff"}, `${fmtSigned(d)} ms`)),
    h("div", null, h("dt", null, "Phase regressed"), h("dd", {"data-role": "phase-regressed", class: sum?.phase_regressed ? "worse" : ""},
      sum?.phase_regressed ? `${LABEL.get(sum.phase_regressed) ?? sum.phase_regressed} (${fmtSigned(sum.phase_regressed_ms)} ms)` : "none grew")));
  const only = [...(sum?.only_base_ranks ?? []).map((r) => `rank ${r} only in the baseline`), ...(sum?.only_target_ranks ?? []).map((r) => `rank ${r} only in the target`)];
  const cols: Array<[string, string, "num" | "diff" | "text"]> = [["rank", "Rank", "num"],
    ["step_time_base_ms", "Step time, baseline (ms)", "num"], ["step_time_ms", "Step time, target (ms)", "num"],
    ...METRICS.map(([m, l]) => [`${m}_diff_ms`, `${l} diff (ms)`, "diff"] as [string, string, "diff"])];
  const open = (r: DiffRow) => openPair(r.base_worker ? workerId(data.run, r.base_worker) : null,
                                        r.target_worker ? workerId(ag.run, r.target_worker) : null, r.rank ?? null);
  const aggTable = sortedTable({label: "Aggregate differences", role: "diff-aggregate", rows: agg, sort: {key: "", desc: false},
    cols: [["scope", "Aggregate", "text"], ...cols.slice(1)], rowAttrs: (r) => ({"data-scope": r.scope})});
  const rankTbl = sortedTable({label: "Per-rank differences (target − baseline)", role: "diff-table", rows: per, cols,
    sort: {key: "step_time_diff_ms", desc: true}, rowAttrs: (r) => ({"data-rank": String(r.rank)}),
    cell: (r, k) => k === "rank" ? h("td", {class: "num"}, h("button", {class: "linkish cl-rank", type: "button", "data-rank": String(r.rank),
      title: `Open baseline ${r.base_worker ?? "—"} against target ${r.target_worker ?? "—"} in the pair views`, onClick: () => open(r)}, String(r.rank))) : null});
  void ctx;
  return h("section", {"data-role": "cluster-diff"},
    h("h2", null, `Against ${ag.run}`),
    h("p", {class: "muted intro"}, "Target − baseline per rank (positive = the target is slower); the aggregate rows compare each side's median and maximum, so runs of different sizes compare. Click a rank to open its two workers in the pair views."),
    cards, only.length ? h("p", {class: "muted"}, only.join("; ")) : null,
    aggTable, rankTbl);
}

// -- the view ---------------------------------------------------------------------------------

function draw(host: HTMLElement, data: ClusterAnswer, ctx: ViewCtx, step: number | null, transport: string): void {
  const run = data.run;
  const steps = data.summary?.steps ?? [...new Set(data.ranks.map((r) => r.step).filter(isNum))].sort((a, b) => a - b);
  const rows = perRank(data.ranks, step);
  const slow = slowByRank(data.slow_ranks ?? []);
  const workerOf = new Map(rows.map((r) => [r.rank, r.worker]));
  const median = data.summary?.slowest_rank?.median_step_time_ms;
  const typical = (() => {          // the rank nearest the median step time: the default other side
    let best: RankRow | null = null;
    for (const r of rows) {
      const v = r.step_time_ms as Num;
      if (!isNum(v) || slow.has(r.rank)) continue;
      if (!best || Math.abs(v - (median ?? v)) < Math.abs((best.step_time_ms as number) - (median ?? v))) best = r;
    }
    return best;
  })();
  const againstRow = new Map((data.diff ?? []).filter((r) => r.scope === "rank" && isNum(r.rank)).map((r) => [r.rank as number, r]));
  const openPair = (b: string | null, t: string | null) => {
    if (!b && !t) return;
    ctx.onPair({worker: b ?? t!, step: null}, {worker: t ?? b!, step: null});
  };
  /** A rank: baseline = its worker here; target = its worker in the against run, else the typical rank of this run. */
  const open = (rank: number) => {
    const w = workerOf.get(rank);
    const d = againstRow.get(rank);
    if (data.against && d) {
      openPair(d.base_worker ? workerId(run, d.base_worker) : null, d.target_worker ? workerId(data.against.run, d.target_worker) : null);
      return;
    }
    const other = typical && typical.rank !== rank ? typical : rows.find((r) => r.rank !== rank) ?? null;
    if (w) openPair(workerId(run, w), other ? workerId(run, other.worker) : workerId(run, w));
  };
  const openLink = (s: number, d: number) => {
    const a = workerOf.get(s), b = workerOf.get(d);
    if (a && b) openPair(workerId(run, a), workerId(run, b));
  };
  const setSub = (patch: {step?: number | null; transport?: string}) => {
    const st = "step" in patch ? patch.step ?? null : step, tr = patch.transport ?? transport;
    const solo = ctx.query.sub.split(";").includes("solo");
    ctx.onQuery({...ctx.query, sub: [solo ? "solo" : "", st !== null ? `s${st}` : "", tr ? `t${tr}` : ""].filter(Boolean).join(";")}, true);
  };
  const stepPick = h("select", {"aria-label": "Step", "data-role": "cluster-step", onChange: (ev: Event) => {
    const v = (ev.target as HTMLSelectElement).value;
    setSub({step: v === "" ? null : Number(v)});
  }}, h("option", {value: ""}, `Mean of ${steps.length} step${steps.length === 1 ? "" : "s"}`),
     ...steps.map((s) => h("option", {value: String(s), selected: s === step}, `Step ${s}`)));
  const pairs = data.link_pairs ?? [];
  const transports = [...new Set(pairs.map((p) => p.transport))].sort();
  const slowLinkReason = new Map((data.slow_links ?? []).map((l) => [`${l.src_rank}-${l.dst_rank}-${l.transport}`, l.reason ?? null]));
  const tr = transport && transports.includes(transport) ? transport : "";
  const cells = new Map<string, LinkCell>();
  for (const p of pairs) {                          // one cell per (src, dst): the chosen transport, else the busiest row
    if (tr && p.transport !== tr) continue;
    if (!tr && p.transport === "LOCAL" && transports.length > 1) continue;
    const k = `${p.src_rank}-${p.dst_rank}`;
    const have = cells.get(k);
    const c = {...p, reason: slowLinkReason.get(`${k}-${p.transport}`) ?? null};
    if (!have || (c.slow && !have.slow) || (!have.slow && (c.size_mb ?? 0) > (have.size_mb ?? 0))) cells.set(k, c);
  }
  const trPick = h("select", {"aria-label": "Transport", "data-role": "transport-pick", onChange: (ev: Event) => setSub({transport: (ev.target as HTMLSelectElement).value})},
    h("option", {value: ""}, transports.length > 1 ? "All transports (without LOCAL)" : "All transports"),
    ...transports.map((t) => h("option", {value: t, selected: t === tr}, t)));
  const rankAxis = [...new Set([...rows.map((r) => r.rank), ...pairs.map((p) => p.src_rank), ...pairs.map((p) => p.dst_rank)])].sort((a, b) => a - b);
  const bars: RankBar[] = rows.map((r) => ({rank: r.rank, values: r as Record<string, Num>, step_time_ms: r.step_time_ms as Num,
                                            slow: slow.has(r.rank) ? slow.get(r.rank)!.map((x) => x.reason).join(" ") : null}));
  const slowest = data.summary?.slowest_rank;
  const hints = data.hints ?? [];
  const warnings = [...(data.warnings ?? []), ...(data.errors ?? []).map((e) => `rank ${e.rank ?? "?"} (${e.worker ?? "?"}) left out: ${e.error ?? "error"}`)];
  const soloNow = ctx.query.sub.split(";").includes("solo");
  const targetRun = runOf(ctx.target.worker);
  const againstToggle = targetRun !== run && isClusterRun(targetRun) && runOf(ctx.base.worker) === run
    ? h("label", {class: "check"}, h("input", {type: "checkbox", checked: !soloNow, "data-role": "against-toggle", onChange: (ev: Event) => {
        const on = (ev.target as HTMLInputElement).checked;
        const rest = ctx.query.sub.split(";").filter((x) => x && x !== "solo");
        ctx.onQuery({...ctx.query, sub: [...(on ? [] : ["solo"]), ...rest].join(";")}, true);
      }}), ` against ${targetRun} (the target's run)`) : null;
  const xlsx = url("cluster/xlsx", {run, against: data.against?.run ?? null});
  replace(host,
    h("h2", {style: {marginTop: "0"}}, "Cluster ", h("span", {class: "muted", "data-role": "cluster-run"}, run)),
    h("p", {class: "muted intro", "data-role": "cluster-summary"},
      `${data.summary?.rank_count ?? rows.length} ranks, ${steps.length} step${steps.length === 1 ? "" : "s"}`,
      slowest ? `; slowest rank ${slowest.rank} (${fmtNum(slowest.busy_ms)} ms of its own time per step, median step ${fmtNum(slowest.median_step_time_ms)} ms)` : "",
      ". Click a rank (bar, row or finding) to open it in the pair views. "),
    h("div", {class: "toolbar cl-tools"}, h("label", null, "Figures: ", stepPick), againstToggle,
      h("a", {class: "btn small", href: xlsx, download: "", "data-role": "cluster-xlsx"}, "Workbook (.xlsx)")),
    hints.length ? h("div", {class: "notice", "data-role": "cluster-hints"}, h("b", null, "Hints"),
                     h("ul", {class: "hints"}, ...hints.map((t) => h("li", null, t)))) : null,
    findings(data, open, openLink),
    h("h2", null, "Step phases per rank"),
    h("div", {class: "panel"}, rankBars({bars, onOpen: open, label: `${run}, ${step === null ? "mean of the steps" : `step ${step}`}`})),
    h("h2", null, "Ranks"),
    rankTable(rows, slow, ctx, open),
    diffSection(data, ctx, (b, t) => openPair(b, t)),
    h("h2", null, "Links: bandwidth from source to destination rank"),
    pairs.length ? h("div", {class: "panel", "data-role": "links"},
      h("div", {class: "toolbar"}, h("label", null, "Transport: ", trPick),
        h("span", {class: "muted"}, ` ${cells.size} links over all steps and collectives; a click opens the two ranks in the pair views.`)),
      linkHeatmap({ranks: rankAxis, cells: [...cells.values()], onOpen: (s, d) => openLink(s, d)}))
      : h("p", {class: "muted", "data-role": "links"}, "No link data in this run."),
    collectiveSection(data, open),
    warnings.length ? h("div", {class: "notice warn", role: "note", "data-role": "cluster-warnings"},
                        h("ul", {class: "notes"}, ...warnings.map((w) => h("li", null, w)))) : null);
}

function parseSub(sub: string): {solo: boolean; step: number | null; transport: string} {
  const parts = sub.split(";");
  const s = parts.find((p) => /^s-?\d+$/.test(p));
  const t = parts.find((p) => p.startsWith("t") && p.length > 1);
  return {solo: parts.includes("solo"), step: s ? Number(s.slice(1)) : null, transport: t ? t.slice(1) : ""};
}

async function render(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  knownRuns = ctx.runs();
  const sub = parseSub(ctx.query.sub);
  const which = clusterRuns(ctx.base, ctx.target, sub.solo);
  if (!which) {
    replace(host, h("div", {class: "notice na", role: "status", "data-state": "not-available"}, "Neither side's run has two or more workers."));
    return;
  }
  const what = which.against ? `Analysing ${which.run} against ${which.against}` : `Analysing the ranks of ${which.run}`;
  replace(host, progressBox(what, null));
  try {
    const body: Record<string, unknown> = {run: which.run};
    if (which.against) body.against = which.against;
    const data = await postReady<ClusterAnswer>("cluster", body, ctx.alive, (l) => {
      if (ctx.alive()) replace(host, progressBox(what, l));
    });
    if (!ctx.alive()) return;
    if (!data || typeof data !== "object" || !Array.isArray(data.ranks)) {
      replace(host, failure("The cluster analysis", new Error("unexpected answer from the server")));
      return;
    }
    draw(host, data, ctx, sub.step, sub.transport);
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure("The cluster analysis", e));
  }
}

export const clusterView: ViewDef = {
  name: "cluster",
  label: "Cluster",
  hideUnavailable: true,
  noPairLoad: true,
  notFor(base, target, runs) {
    knownRuns = runs ?? knownRuns;
    const b = base ? runOf(base.id) : null, t = target ? runOf(target.id) : null;
    if ((b && isClusterRun(b)) || (t && isClusterRun(t))) return null;
    return "neither side's run has two or more workers";
  },
  render,
};
