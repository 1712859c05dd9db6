/** Small SVG charts, no library: stacked bars, a waterfall, and a zoomable line chart. */
import {h, nextId, s} from "./dom";
import {fmtNum, fmtPct, fmtSigned} from "./format";

export function niceTicks(lo: number, hi: number, n = 5): number[] {
  const span = hi - lo;
  if (!(span > 0) || !Number.isFinite(span)) return [lo];
  const raw = span / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const e = raw / mag;
  const step = (e >= 7.5 ? 10 : e >= 3.5 ? 5 : e >= 1.5 ? 2 : 1) * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(10));
  return out;
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const t = niceTicks(0, v, 5);
  const step = t.length > 1 ? t[1] - t[0] : v;
  return Math.ceil(v / step - 1e-9) * step;
}

/** Tick labels: as many decimals as the tick step needs, thousands separated. */
function tickFmt(ticks: number[]): (v: number) => string {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : Math.abs(ticks[0]) || 1;
  const d = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  const f = new Intl.NumberFormat("en-US", {minimumFractionDigits: d, maximumFractionDigits: d});
  return (v: number) => f.format(v);
}

const trunc = (t: string, n: number) => (t.length > n ? t.slice(0, n - 1) + "…" : t);

export interface Segment {
  name: string;
  value: number;
  color: string;
}

export interface BarRow {
  label: string;
  color: string;
  total: number;
  segments: Segment[];
}

/** One horizontal bar per side, split into segments, on a shared scale. */
export function stackedBars(rows: BarRow[], unit: string, title: string): HTMLElement {
  const W = 600, L = 78, R = 84, barH = 24, gap = 14, T = 6, B = 24;
  const H = T + rows.length * (barH + gap) - gap + B;
  const pw = W - L - R;
  const max = niceMax(Math.max(...rows.map((r) => Math.max(r.total, r.segments.reduce((a, x) => a + x.value, 0)))));
  const sx = (v: number) => (v / max) * pw;
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
  const axis = s("g", {class: "axis"});
  const bt = niceTicks(0, max, 5), bf = tickFmt(bt);
  for (const t of bt) {
    const x = L + sx(t);
    axis.append(s("line", {x1: x, x2: x, y1: T - 2, y2: H - B + 4, stroke: "#e8eaed"}),
                s("text", {x, y: H - 6, "text-anchor": "middle"}, bf(t)));
  }
  svg.append(axis);
  rows.forEach((r, i) => {
    const y = T + i * (barH + gap);
    svg.append(s("text", {x: L - 8, y: y + barH / 2 + 4, "text-anchor": "end", fill: r.color,
                          "font-weight": "600"}, r.label));
    let x = L;
    for (const seg of r.segments) {
      if (!(seg.value > 0)) continue;
      const w = sx(seg.value);
      const pct = r.total > 0 ? ` (${fmtPct((seg.value / r.total) * 100)})` : "";
      svg.append(s("rect", {x, y, width: Math.max(w, 0.5), height: barH, fill: seg.color, stroke: "#fff",
                            "stroke-width": 0.5},
                   s("title", null, `${r.label} · ${seg.name}: ${fmtNum(seg.value)} ${unit}${pct}`)));
      if (w > 46) {
        svg.append(s("text", {x: x + w / 2, y: y + barH / 2 + 4, "text-anchor": "middle", fill: "#fff",
                              "pointer-events": "none", style: "font-size:10px"},
                     trunc(seg.name, Math.floor(w / 6.2))));
      }
      x += w;
    }
    svg.append(s("text", {x: L + sx(r.total) + 6, y: y + barH / 2 + 4}, `${fmtNum(r.total)} ${unit}`));
  });
  const seen = new Map<string, string>();
  for (const r of rows) for (const g of r.segments) if (g.value > 0 && !seen.has(g.name)) seen.set(g.name, g.color);
  const legend = h("div", {class: "legend"},
                   ...[...seen].map(([n, c]) => h("span", null, h("span", {class: "sw", style: {background: c}}), n)));
  return h("figure", {style: {margin: "0"}}, svg, legend);
}

export interface Step {
  label: string;
  value: number;
}

/** Baseline total, then signed contributions, then target total. */
export function waterfall(start: Step, steps: Step[], end: Step, unit: string, colors: {base: string; tgt: string},
                          title: string): HTMLElement {
  const W = 600, L = 200, R = 78, rowH = 20, T = 4, B = 22;
  const all = [start, ...steps, end];
  const H = T + all.length * rowH + B;
  const pw = W - L - R;
  const cums: number[] = [start.value];
  for (const st of steps) cums.push(cums[cums.length - 1] + st.value);
  const lo = Math.min(0, ...cums, end.value);
  const hi = niceMax(Math.max(...cums, end.value, start.value));
  const sx = (v: number) => L + ((v - lo) / (hi - lo || 1)) * pw;
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
  const axis = s("g", {class: "axis"});
  const wt = niceTicks(lo, hi, 5), wf = tickFmt(wt);
  for (const t of wt) {
    axis.append(s("line", {x1: sx(t), x2: sx(t), y1: T, y2: H - B + 2, stroke: "#eef0f2"}),
                s("text", {x: sx(t), y: H - 6, "text-anchor": "middle"}, wf(t)));
  }
  svg.append(axis);
  let prevEnd = start.value;
  all.forEach((st, i) => {
    const y = T + i * rowH + 3, bh = rowH - 6;
    let x0: number, x1: number, fill: string, val: string;
    if (i === 0 || i === all.length - 1) {
      x0 = sx(0);
      x1 = sx(st.value);
      fill = i === 0 ? colors.base : colors.tgt;
      val = `${fmtNum(st.value)} ${unit}`;
    } else {
      const a = prevEnd, b = prevEnd + st.value;
      x0 = sx(Math.min(a, b));
      x1 = sx(Math.max(a, b));
      fill = st.value > 0 ? "#d93025" : "#1e8e3e";
      val = fmtSigned(st.value);
      prevEnd = b;
    }
    svg.append(s("text", {x: L - 8, y: y + bh / 2 + 4, "text-anchor": "end",
                          "font-weight": i === 0 || i === all.length - 1 ? "600" : "400"}, trunc(st.label, 32)),
               s("rect", {x: x0, y, width: Math.max(1, x1 - x0), height: bh, fill, rx: 1},
                 s("title", null, `${st.label}: ${val}${i === 0 || i === all.length - 1 ? "" : " " + unit}`)),
               s("text", {x: Math.max(x0, x1) + 4, y: y + bh / 2 + 4,
                          fill: i === 0 || i === all.length - 1 ? "#3c4043" : st.value > 0 ? "#c5221f" : "#137333"},
                 val));
    if (i < all.length - 1) {
      const xe = sx(i === 0 ? st.value : prevEnd);
      svg.append(s("line", {x1: xe, x2: xe, y1: y + bh, y2: y + rowH, stroke: "#9aa0a6", "stroke-dasharray": "2,2"}));
    }
  });
  return h("figure", {style: {margin: "0"}}, svg);
}

export interface Series {
  name: string;
  color: string;
  dash?: boolean;
  xs: number[];
  ys: number[];
}

export interface Marker {
  x: number;
  y: number;
  color: string;
  label: string;
}

function lowerBound(xs: number[], v: number): number {
  let lo = 0, hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Lines on shared axes; drag to select a range, wheel to zoom, double-click or Reset to undo. */
export function lineChart(series: Series[], markers: Marker[],
                          opts: {xLabel: string; yUnit: string; title: string}): HTMLElement {
  const W = 900, H = 300, L = 58, R = 16, T = 20, B = 36;
  const pw = W - L - R, ph = H - T - B;
  const xsAll = series.flatMap((r) => (r.xs.length ? [r.xs[0], r.xs[r.xs.length - 1]] : []));
  const full: [number, number] = xsAll.length ? [Math.min(...xsAll), Math.max(...xsAll)] : [0, 1];
  if (full[1] <= full[0]) full[1] = full[0] + 1;
  let dom: [number, number] = [full[0], full[1]];

  const clipId = nextId("clip");
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opts.title});
  svg.append(s("defs", null, s("clipPath", {id: clipId}, s("rect", {x: L, y: T, width: pw, height: ph}))));
  const gAxes = s("g", {class: "axis"});
  const gPlot = s("g", {"clip-path": `url(#${clipId})`});
  const cross = s("line", {y1: T, y2: T + ph, stroke: "#5f6368", "stroke-dasharray": "3,3", visibility: "hidden"});
  const sel = s("rect", {y: T, height: ph, fill: "rgba(26,115,232,.15)", stroke: "#1a73e8", visibility: "hidden"});
  const overlay = s("rect", {x: L, y: T, width: pw, height: ph, fill: "transparent", style: "cursor:crosshair"});
  svg.append(gAxes, gPlot, cross, sel, overlay);
  const readout = h("div", {class: "readout", "aria-live": "polite"}, "Drag across the chart to zoom into a range; "
                    + "the mouse wheel zooms around the pointer; double-click resets.");
  let yMax = 1;
  const X = (v: number) => L + ((v - dom[0]) / (dom[1] - dom[0])) * pw;
  const Y = (v: number) => T + ph - (v / yMax) * ph;
  const invX = (px: number) => dom[0] + ((px - L) / pw) * (dom[1] - dom[0]);

  function draw(): void {
    let m = 0;
    for (const r of series) {
      const a = Math.max(0, lowerBound(r.xs, dom[0]) - 1), b = Math.min(r.xs.length, lowerBound(r.xs, dom[1]) + 1);
      for (let i = a; i < b; i++) if (r.ys[i] > m) m = r.ys[i];
    }
    yMax = niceMax(m * 1.05);
    gAxes.replaceChildren();
    gPlot.replaceChildren();
    const yt = niceTicks(0, yMax, 5), yf = tickFmt(yt);
    for (const t of yt) {
      gAxes.append(s("line", {x1: L, x2: L + pw, y1: Y(t), y2: Y(t), stroke: "#eef0f2"}),
                   s("text", {x: L - 6, y: Y(t) + 4, "text-anchor": "end"}, yf(t)));
    }
    const xt = niceTicks(dom[0], dom[1], 7), xf = tickFmt(xt);
    for (const t of xt) {
      gAxes.append(s("line", {x1: X(t), x2: X(t), y1: T + ph, y2: T + ph + 4, stroke: "#9aa0a6"}),
                   s("text", {x: X(t), y: T + ph + 16, "text-anchor": "middle"}, xf(t)));
    }
    gAxes.append(s("line", {x1: L, x2: L + pw, y1: T + ph, y2: T + ph, stroke: "#9aa0a6"}),
                 s("text", {x: L + pw / 2, y: H - 4, "text-anchor": "middle"}, opts.xLabel),
                 s("text", {x: L - 6, y: 11, "text-anchor": "end", "font-weight": "600"}, opts.yUnit));
    for (const r of series) {
      const a = Math.max(0, lowerBound(r.xs, dom[0]) - 1), b = Math.min(r.xs.length, lowerBound(r.xs, dom[1]) + 1);
      const pts: string[] = [];
      for (let i = a; i < b; i++) if (Number.isFinite(r.ys[i])) pts.push(`${X(r.xs[i]).toFixed(1)},${Y(r.ys[i]).toFixed(1)}`);
      if (pts.length) {
        gPlot.append(s("polyline", {points: pts.join(" "), fill: "none", stroke: r.color, "stroke-width": 1.6,
                                    "stroke-dasharray": r.dash ? "5,3" : null, "stroke-linejoin": "round"},
                       s("title", null, r.name)));
      }
    }
    for (const mk of markers) {
      if (mk.x < dom[0] || mk.x > dom[1]) continue;
      // the labels are in the legend: in the plot they would sit on the curves and reference lines
      gPlot.append(s("circle", {cx: X(mk.x), cy: Y(mk.y), r: 4.5, fill: "#fff", stroke: mk.color, "stroke-width": 2},
                     s("title", null, mk.label)));
    }
  }

  const toVX = (ev: MouseEvent) => {
    const rect = svg.getBoundingClientRect();
    return ((ev.clientX - rect.left) * W) / (rect.width || W);
  };
  const clampDom = (a: number, b: number) => {
    const span = Math.max(b - a, (full[1] - full[0]) * 1e-6);
    a = Math.max(full[0], a);
    b = Math.min(full[1], a + span);
    a = Math.max(full[0], b - span);
    dom = [a, b];
    draw();
  };
  const zoom = (f: number, cx?: number) => {
    const c = cx ?? (dom[0] + dom[1]) / 2;
    clampDom(c - (c - dom[0]) * f, c + (dom[1] - c) * f);
  };
  let dragX: number | null = null;
  overlay.addEventListener("pointerdown", (ev) => {
    dragX = toVX(ev);
    overlay.setPointerCapture(ev.pointerId);
  });
  overlay.addEventListener("pointermove", (ev) => {
    const vx = Math.min(L + pw, Math.max(L, toVX(ev)));
    if (dragX !== null) {
      sel.setAttribute("x", String(Math.min(dragX, vx)));
      sel.setAttribute("width", String(Math.abs(vx - dragX)));
      sel.setAttribute("visibility", "visible");
      return;
    }
    cross.setAttribute("x1", String(vx));
    cross.setAttribute("x2", String(vx));
    cross.setAttribute("visibility", "visible");
    const t = invX(vx);
    const parts = series.map((r) => {
      if (!r.xs.length) return "";
      let i = lowerBound(r.xs, t);
      if (i >= r.xs.length || (i > 0 && t - r.xs[i - 1] < r.xs[i] - t)) i -= 1;
      return `${r.name}: ${fmtNum(r.ys[i])} ${opts.yUnit}`;
    }).filter(Boolean);
    readout.textContent = `${opts.xLabel} ${fmtNum(t)} · ${parts.join(" · ")}`;
  });
  overlay.addEventListener("pointerleave", () => cross.setAttribute("visibility", "hidden"));
  overlay.addEventListener("pointerup", (ev) => {
    if (dragX === null) return;
    const vx = Math.min(L + pw, Math.max(L, toVX(ev)));
    const a = Math.min(dragX, vx), b = Math.max(dragX, vx);
    dragX = null;
    sel.setAttribute("visibility", "hidden");
    if (b - a > 4) clampDom(invX(a), invX(b));
  });
  overlay.addEventListener("dblclick", () => clampDom(full[0], full[1]));
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 0.8 : 1.25, invX(Math.min(L + pw, Math.max(L, toVX(ev)))));
  }, {passive: false});

  const tools = h("div", {class: "chart-tools"},
                  h("button", {class: "btn", type: "button", onClick: () => zoom(0.5)}, "Zoom in"),
                  h("button", {class: "btn", type: "button", onClick: () => zoom(2)}, "Zoom out"),
                  h("button", {class: "btn", type: "button", onClick: () => clampDom(full[0], full[1])}, "Reset zoom"));
  const legend = h("div", {class: "legend"}, ...series.map((r) =>
    h("span", null, h("span", {class: r.dash ? "dash" : "solid", style: {borderColor: r.color}}), r.name)),
    ...markers.map((mk) => h("span", {class: "mk-label"}, h("span", {class: "ring", style: {borderColor: mk.color}}), mk.label)));
  draw();
  return h("div", {class: "linechart"}, tools, svg, readout, legend);
}
