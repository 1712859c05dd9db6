/**
 * The metric tree of compare/overall (overview and communication views): indentation by
 * depth, collapsible parents, each row's kernels on demand (both sides side by side).
 */
import {h, replace} from "./dom";
import {fmtCount, fmtNum, fmtRatio, fmtSigned, higherIsBetter, isNum, verdict} from "./format";
import type {Kernel, MetricRow} from "./types";

const depthOf = (r: MetricRow) => (isNum(r.depth) ? r.depth : 0);

/** Kernel names can be whole C++ signatures: drop "void " and the trailing argument list. */
export function shortKernel(name: string): string {
  let t = name.replace(/^void\s+/, "");
  if (t.endsWith(")")) {
    let depth = 0;
    for (let i = t.length - 1; i > 0; i--) {
      if (t[i] === ")") depth++;
      else if (t[i] === "(" && --depth === 0) {
        t = t.slice(0, i);
        break;
      }
    }
  }
  return t.length > 140 ? t.slice(0, 139) + "…" : t;
}

function kernelLists(r: MetricRow): {baseline: Kernel[]; target: Kernel[]; flat: Kernel[]} {
  const k = r.kernels;
  if (!k) return {baseline: [], target: [], flat: []};
  if (Array.isArray(k)) {
    const b = k.filter((x) => x.side === "baseline"), t = k.filter((x) => x.side === "target");
    return b.length || t.length ? {baseline: b, target: t, flat: []} : {baseline: [], target: [], flat: k};
  }
  return {baseline: k.baseline ?? [], target: k.target ?? [], flat: []};
}

function kernelTable(title: string, ks: Kernel[]): HTMLElement {
  const body = h("tbody", null, ...ks.map((k) => h("tr", null,
    h("td", {class: "name", title: k.name}, shortKernel(k.name)), h("td", {class: "num"}, fmtNum(k.duration_ms)),
    h("td", {class: "num"}, fmtCount(k.count)))));
  if (!ks.length) body.append(h("tr", null, h("td", {colspan: "3", class: "muted"}, "none")));
  return h("div", null, h("h3", null, title), h("table", {class: "t", "aria-label": title},
    h("thead", null, h("tr", null, h("th", {scope: "col"}, "Kernel"), h("th", {scope: "col", class: "num"}, "Duration (ms)"),
                       h("th", {scope: "col", class: "num"}, "Count"))), body));
}

function unitOf(r: MetricRow): string {
  return r.unit && r.unit !== "ms" ? ` ${r.unit}` : "";
}

/** The metric tree: indentation by depth, collapsible parents, kernels on demand. */
export function metricTable(rows: MetricRow[], label: string): HTMLElement {
  const collapsed = new Set<number>();
  const open = new Set<number>();
  const wrap = h("div", {class: "tbl-wrap"});
  const hasKids = (i: number) => i + 1 < rows.length && depthOf(rows[i + 1]) > depthOf(rows[i]);
  const kcount = (r: MetricRow) => {
    const k = kernelLists(r);
    return k.flat.length + k.baseline.length + k.target.length;
  };
  const anyKernels = rows.some((r) => kcount(r) > 0);
  function draw(): void {
    const body = h("tbody");
    let hideBelow = Infinity;
    rows.forEach((r, i) => {
      const d = depthOf(r);
      if (d <= hideBelow) hideBelow = Infinity;
      if (hideBelow !== Infinity) return;
      if (collapsed.has(i)) hideBelow = d;
      const hib = higherIsBetter(r.name);
      const vd = verdict(r.diff_ms, "diff", hib), vr = verdict(r.ratio, "ratio", hib);
      const u = unitOf(r);
      const name = h("td", {class: "name", style: {paddingLeft: `${8 + d * 18}px`}});
      if (hasKids(i)) {
        const isOpen = !collapsed.has(i);
        name.append(h("button", {class: "tog", type: "button", "aria-expanded": String(isOpen),
                                 "aria-label": `${isOpen ? "Collapse" : "Expand"} ${r.name.trim()}`,
                                 onClick: () => { if (isOpen) collapsed.add(i); else collapsed.delete(i); draw(); }},
                           isOpen ? "▾" : "▸"));
      } else name.append(h("span", {class: "tog", "aria-hidden": "true"}));
      name.append(h("span", {class: "label"}, r.name.trim()));
      const n = kcount(r);
      let kcell: HTMLElement | null = null;
      if (anyKernels) {
        kcell = h("td");
        if (n) {
          const ks = kernelLists(r);
          const top = [...ks.flat, ...ks.baseline, ...ks.target].slice(0, 12)
            .map((k) => `${k.side ? k.side + ": " : ""}${shortKernel(k.name)} — ${fmtNum(k.duration_ms)} ms × ${fmtCount(k.count)}`).join("\n");
          const isOpen = open.has(i);
          kcell.append(h("button", {class: "btn small", type: "button", title: top, "aria-expanded": String(isOpen),
                                    onClick: () => { if (isOpen) open.delete(i); else open.add(i); draw(); }},
                             `${isOpen ? "Hide" : "Kernels"} (${n})`));
        }
      }
      body.append(h("tr", {class: d === 0 ? "row-top" : ""}, name,
        h("td", {class: "num"}, fmtNum(r.baseline?.duration_ms) + u), h("td", {class: "num"}, fmtCount(r.baseline?.count)),
        h("td", {class: "num"}, fmtNum(r.target?.duration_ms) + u), h("td", {class: "num"}, fmtCount(r.target?.count)),
        h("td", {class: `num ${vd}`}, fmtSigned(r.diff_ms) + u, vd ? h("span", {"aria-hidden": "true"}, vd === "worse" ? " ▲" : " ▼") : ""),
        h("td", {class: `num ${vr}`}, fmtRatio(r.ratio)), kcell));
      if (open.has(i) && n) {
        const ks = kernelLists(r);
        const inner = ks.flat.length ? kernelTable(`Kernels in ${r.name.trim()}`, ks.flat)
          : h("div", {class: "kern"}, kernelTable("Baseline kernels", ks.baseline), kernelTable("Target kernels", ks.target));
        body.append(h("tr", {class: "detail"}, h("td", {colspan: "8"}, inner)));
      }
    });
    replace(wrap, h("table", {class: "t metrics", "aria-label": label},
      h("thead", null, h("tr", null, h("th", {scope: "col"}, "Metric"),
        h("th", {class: "num", scope: "col"}, "Baseline (ms)"), h("th", {class: "num", scope: "col"}, "Count"),
        h("th", {class: "num", scope: "col"}, "Target (ms)"), h("th", {class: "num", scope: "col"}, "Count"),
        h("th", {class: "num", scope: "col"}, "Diff (ms)"), h("th", {class: "num", scope: "col"}, "Ratio"),
        anyKernels ? h("th", {scope: "col"}, "Kernels") : null)), body));
  }
  draw();
  return wrap;
}

