/**
 * The overview's communication rows: one row per collective (both sides' calls / total / avg,
 * diff, ratio) with its tasks as expandable child rows and the link figures (wait, transit,
 * bytes, bandwidth) under the name.
 */
import {h, replace} from "./dom";
import {fmtCount, fmtMB, fmtNum, fmtRatio, fmtSigned, isNum, verdict} from "./format";

export interface CommSide {
  calls?: number | null;
  total_ms?: number | null;
  avg_ms?: number | null;
  max_ms?: number | null;
  min_ms?: number | null;
  wait_ms?: number | null;
  transit_ms?: number | null;
  bytes?: number | null;
  bandwidth_gbps?: number | null;
}

export interface CommRow {
  name: string;
  group?: string | null;
  aggregate?: boolean;
  baseline?: CommSide | null;
  target?: CommSide | null;
  diff_ms?: number | null;
  ratio?: number | null;
  status?: string;
  tasks?: CommRow[];
}

export function isCommRows(x: unknown): x is CommRow[] {
  if (!Array.isArray(x) || !x.length) return false;
  const r = x[0] as CommRow;
  const side = (r.baseline ?? r.target) as CommSide | undefined;
  return typeof r.name === "string" && (Array.isArray(r.tasks) || (!!side && ("calls" in side || "total_ms" in side)));
}

function extras(label: string, s: CommSide | null | undefined): string {
  if (!s) return "";
  const bits: string[] = [];
  if (isNum(s.wait_ms)) bits.push(`wait ${fmtNum(s.wait_ms)} ms`);
  if (isNum(s.transit_ms)) bits.push(`transit ${fmtNum(s.transit_ms)} ms`);
  if (isNum(s.bytes) && s.bytes > 0) bits.push(`${fmtMB(s.bytes)} MiB`);
  if (isNum(s.bandwidth_gbps) && s.bandwidth_gbps > 0) bits.push(`${fmtNum(s.bandwidth_gbps)} GB/s`);
  return bits.length ? `${label}: ${bits.join(" · ")}` : "";
}

function sideCells(s: CommSide | null | undefined): HTMLElement[] {
  const title = s && (isNum(s.max_ms) || isNum(s.min_ms)) ? `max ${fmtNum(s.max_ms)} ms, min ${fmtNum(s.min_ms)} ms` : "";
  return [h("td", {class: "num"}, fmtCount(s?.calls)), h("td", {class: "num", title}, fmtNum(s?.total_ms)),
          h("td", {class: "num"}, fmtNum(s?.avg_ms))];
}

function badge(status: string | undefined): HTMLElement | null {
  if (status === "baseline_only") return h("span", {class: "badge baseline_only"}, "baseline only");
  if (status === "target_only") return h("span", {class: "badge target_only"}, "target only");
  return null;
}

export function commTable(rows: CommRow[]): HTMLElement {
  const open = new Set<number>(rows.length <= 3 ? rows.map((_, i) => i) : []);
  const wrap = h("div", {class: "tbl-wrap"});
  const line = (r: CommRow, depth: number, toggle: HTMLElement | null) => {
    const vd = verdict(r.diff_ms, "diff"), vr = verdict(r.ratio, "ratio");
    const ex = [extras("baseline", r.baseline), extras("target", r.target)].filter(Boolean).join(" — ");
    return h("tr", {class: (r.aggregate ? "row-top " : "") + (r.status === "baseline_only" ? "only-baseline"
                      : r.status === "target_only" ? "only-target" : "")},
             h("td", {class: "name", style: {paddingLeft: `${8 + depth * 18}px`}},
               toggle ?? h("span", {class: "tog", "aria-hidden": "true"}), h("span", {class: "label"}, r.name), badge(r.status),
               ex ? h("div", {class: "muted", style: {fontSize: "11.5px"}}, ex) : null),
             h("td", null, depth ? "" : r.group ?? ""),
             ...sideCells(r.baseline), ...sideCells(r.target),
             h("td", {class: `num ${vd}`}, fmtSigned(r.diff_ms)), h("td", {class: `num ${vr}`}, fmtRatio(r.ratio)));
  };
  function draw(): void {
    const body = h("tbody");
    rows.forEach((r, i) => {
      const tasks = Array.isArray(r.tasks) ? r.tasks : [];
      const isOpen = open.has(i);
      const tog = tasks.length ? h("button", {class: "tog", type: "button", "aria-expanded": String(isOpen),
                                              "aria-label": `${isOpen ? "Hide" : "Show"} the tasks of ${r.name}`,
                                              onClick: () => { if (isOpen) open.delete(i); else open.add(i); draw(); }},
                                   isOpen ? "▾" : "▸") : null;
      body.append(line(r, 0, tog));
      if (isOpen) for (const t of tasks) body.append(line(t, 1, null));
    });
    replace(wrap, h("table", {class: "t comm", "aria-label": "Communication"},
      h("thead", null,
        h("tr", null, h("th", {scope: "col", rowspan: "2"}, "Collective / task"), h("th", {scope: "col", rowspan: "2"}, "Group"),
          h("th", {scope: "colgroup", colspan: "3", class: "grp base"}, "Baseline"),
          h("th", {scope: "colgroup", colspan: "3", class: "grp tgt"}, "Target"),
          h("th", {scope: "col", rowspan: "2", class: "num"}, "Diff (ms)"), h("th", {scope: "col", rowspan: "2", class: "num"}, "Ratio")),
        h("tr", null, ...["Calls", "Total (ms)", "Avg (ms)", "Calls", "Total (ms)", "Avg (ms)"].map((t) =>
          h("th", {scope: "col", class: "num"}, t)))), body));
  }
  draw();
  return wrap;
}
