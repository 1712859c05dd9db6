/**
 * The Cluster view's two canvases: a stacked bar per rank (the step's phases, one column per
 * rank, slow ranks marked) and the src x dst link heatmap (colour = bandwidth, transport letter
 * and slow outline). Canvas, not one DOM node per rank or link, so 1,024 ranks (a million
 * heatmap cells) draw in one pass; hover shows a tooltip, the keyboard moves a focus ring
 * (arrows, Home/End) and Enter opens the focused rank. Colours come from the theme's CSS
 * variables and are re-read when the theme changes.
 */
import {h} from "./dom";
import {fmtNum, isNum} from "./format";

/** The stacked parts of a rank's step, bottom to top: key, label, colour. */
export const RANK_PARTS: ReadonlyArray<[string, string, string]> = [
  ["computing_ms", "Computing", "#1a73e8"],
  ["communication_not_overlapped_ms", "Communication (not overlapped)", "#e8710a"],
  ["free_ms", "Free", "#9aa0a6"],
  ["preparing_ms", "Preparing", "#a142f4"],
  ["bubble_ms", "Bubble", "#d93025"],
];

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/** Call draw now and whenever the theme class of <html> changes, while the canvas is in the page. */
function followTheme(canvas: HTMLCanvasElement, draw: () => void): void {
  draw();
  const mo = new MutationObserver(() => {
    if (!canvas.isConnected) mo.disconnect();
    else draw();
  });
  mo.observe(document.documentElement, {attributes: true, attributeFilter: ["class"]});
}

function sizeCanvas(c: HTMLCanvasElement, w: number, hgt: number): CanvasRenderingContext2D {
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(w * dpr);
  c.height = Math.round(hgt * dpr);
  c.style.width = `${w}px`;
  c.style.height = `${hgt}px`;
  const g = c.getContext("2d")!;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  return g;
}

function tooltip(): HTMLElement {
  return h("div", {class: "cl-tip", role: "tooltip", hidden: true});
}

function placeTip(tip: HTMLElement, box: HTMLElement, x: number, y: number, lines: string[]): void {
  tip.replaceChildren(...lines.map((l, i) => h("div", i === 0 ? {class: "cl-tip-head"} : null, l)));
  tip.hidden = false;
  const bw = box.clientWidth;
  const tw = tip.offsetWidth;
  tip.style.left = `${Math.max(0, Math.min(bw - tw - 4, x + 12))}px`;
  tip.style.top = `${y + 14}px`;
}

// -- stacked bars per rank ---------------------------------------------------------------------

export interface RankBar {
  rank: number;
  values: Record<string, number | null | undefined>;
  step_time_ms: number | null | undefined;
  slow: string | null;          // the reasons, when the rank is flagged
}

export interface BarsOpts {
  bars: RankBar[];
  onOpen(rank: number): void;
  label: string;
}

/** A canvas with one stacked column per rank; returns its frame (legend, canvas, live status). */
export function rankBars(o: BarsOpts): HTMLElement {
  const canvas = h("canvas", {class: "cl-canvas", tabindex: "0", role: "img", "data-role": "rank-bars",
                              "aria-label": `${o.label}: stacked step phases per rank. Arrow keys move between ranks, Enter opens the rank in the pair views.`});
  const tip = tooltip();
  const live = h("div", {class: "sr-only", "aria-live": "polite", "data-role": "rank-bars-focus"});
  const box = h("div", {class: "cl-canvas-box"}, canvas, tip);
  const legend = h("div", {class: "legend"}, ...RANK_PARTS.map(([, l, c]) => h("span", null, h("span", {class: "sw", style: {background: c}}), l)),
    h("span", {class: "legend-gap"}, h("span", {class: "cl-mark"}, "▲"), " slow rank"),
    h("span", null, h("span", {class: "cl-tick"}), " step time"));
  const n = o.bars.length;
  let focus = -1;
  let geom = {left: 48, top: 14, plotW: 0, plotH: 200, colW: 1};
  const total = (b: RankBar) => RANK_PARTS.reduce((a, [k]) => a + (isNum(b.values[k]) ? (b.values[k] as number) : 0), 0);
  const maxV = Math.max(1e-9, ...o.bars.map((b) => Math.max(total(b), isNum(b.step_time_ms) ? b.step_time_ms : 0)));

  const draw = () => {
    const W = Math.min(Math.max(320, box.clientWidth || 900), 52 + 8 + Math.max(1, n) * 56);   // at most 56 px a rank
    const H = 240;
    const g = sizeCanvas(canvas, W, H);
    const left = 52, right = 8, top = 16, bottom = 26;
    const plotW = W - left - right, plotH = H - top - bottom;
    const colW = plotW / Math.max(1, n);
    geom = {left, top, plotW, plotH, colW};
    const fg = cssVar("--chart-text", "#3c4043"), grid = cssVar("--gridline", "#f1f3f4"), worse = cssVar("--worse", "#c5221f");
    const accent = cssVar("--accent", "#1a73e8"), sel = cssVar("--sel-bg", "#e8f0fe"), fgMain = cssVar("--fg", "#202124");
    g.clearRect(0, 0, W, H);
    g.font = "11px system-ui, sans-serif";
    g.fillStyle = fg;
    g.strokeStyle = grid;
    for (let i = 0; i <= 4; i++) {
      const v = (maxV * i) / 4, y = top + plotH - (v / maxV) * plotH;
      g.beginPath(); g.moveTo(left, y + 0.5); g.lineTo(left + plotW, y + 0.5); g.stroke();
      g.textAlign = "right"; g.fillText(fmtNum(v), left - 4, y + 4);
    }
    g.save(); g.translate(10, top + plotH / 2); g.rotate(-Math.PI / 2); g.textAlign = "center"; g.fillText("ms per step", 0, 0); g.restore();
    if (focus >= 0) { g.fillStyle = sel; g.fillRect(left + focus * colW, top, Math.max(colW, 2), plotH); }
    const gap = colW >= 6 ? Math.min(2, colW * 0.15) : 0;
    for (let i = 0; i < n; i++) {
      const b = o.bars[i];
      const x = left + i * colW;
      let y = top + plotH;
      for (const [k, , c] of RANK_PARTS) {
        const v = b.values[k];
        if (!isNum(v) || v <= 0) continue;
        const hh = (v / maxV) * plotH;
        g.fillStyle = c;
        g.fillRect(x + gap / 2, y - hh, Math.max(colW - gap, 0.6), hh);
        y -= hh;
      }
      if (isNum(b.step_time_ms)) {
        const ys = top + plotH - (b.step_time_ms / maxV) * plotH;
        g.fillStyle = fgMain;
        g.fillRect(x + gap / 2, ys - 1, Math.max(colW - gap, 1), 1.5);
      }
      if (b.slow) {
        g.fillStyle = worse;
        g.textAlign = "center";
        g.fillText("▲", x + colW / 2, top - 3);
      }
    }
    // rank labels: every k-th so they do not overlap
    g.fillStyle = fg;
    g.textAlign = "center";
    const every = Math.max(1, Math.ceil(28 / colW));
    for (let i = 0; i < n; i += every) g.fillText(String(o.bars[i].rank), left + (i + 0.5) * colW, top + plotH + 14);
    g.fillText("rank", left + plotW / 2, H - 1);
    if (focus >= 0) {
      g.strokeStyle = accent; g.lineWidth = 2;
      g.strokeRect(left + focus * colW, top, Math.max(colW, 2), plotH);
      g.lineWidth = 1;
    }
  };
  const at = (ev: MouseEvent) => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((ev.clientX - r.left - geom.left) / geom.colW);
    return i >= 0 && i < n ? i : -1;
  };
  const describe = (b: RankBar): string[] => [
    `Rank ${b.rank}${b.slow ? " — slow" : ""}`,
    `Step time ${fmtNum(b.step_time_ms)} ms`,
    ...RANK_PARTS.filter(([k]) => isNum(b.values[k])).map(([k, l]) => `${l}: ${fmtNum(b.values[k])} ms`),
    ...(b.slow ? [b.slow] : []),
    "Click (or Enter) to open this rank in the pair views"];
  canvas.addEventListener("mousemove", (ev) => {
    const i = at(ev);
    if (i < 0) { tip.hidden = true; canvas.style.cursor = ""; return; }
    canvas.style.cursor = "pointer";
    const r = box.getBoundingClientRect();
    placeTip(tip, box, ev.clientX - r.left, ev.clientY - r.top, describe(o.bars[i]));
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const i = at(ev);
    if (i >= 0) o.onOpen(o.bars[i].rank);
  });
  canvas.addEventListener("keydown", (ev) => {
    const step = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : ev.key === "PageDown" ? 10 : ev.key === "PageUp" ? -10 : 0;
    if (step || ev.key === "Home" || ev.key === "End") {
      ev.preventDefault();
      focus = ev.key === "Home" ? 0 : ev.key === "End" ? n - 1 : Math.max(0, Math.min(n - 1, (focus < 0 ? 0 : focus + step)));
      draw();
      live.textContent = describe(o.bars[focus]).slice(0, -1).join("; ");
    } else if (ev.key === "Enter" && focus >= 0) {
      ev.preventDefault();
      o.onOpen(o.bars[focus].rank);
    }
  });
  canvas.addEventListener("blur", () => { if (focus >= 0) { focus = -1; draw(); } });
  const frame = h("div", {class: "cl-chart"}, legend, box, live);
  requestAnimationFrame(() => followTheme(canvas, draw));
  return frame;
}

// -- link heatmap ------------------------------------------------------------------------------

export interface LinkCell {
  src_rank: number;
  dst_rank: number;
  transport: string;
  size_mb?: number | null;
  time_ms?: number | null;
  bandwidth_gbps?: number | null;
  slow?: boolean;
  reason?: string | null;
}

/** Bandwidth colour scale (low = dark purple, high = yellow): viridis-like stops. */
const STOPS: Array<[number, number, number]> = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

function ramp(t: number): string {
  const x = Math.max(0, Math.min(1, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x)), f = x - i;
  const c = STOPS[i].map((v, j) => Math.round(v + (STOPS[i + 1][j] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function rampCss(): string {
  return `linear-gradient(to right, ${STOPS.map((c, i) => `rgb(${c.join(",")}) ${(i / (STOPS.length - 1)) * 100}%`).join(", ")})`;
}

export function transportLetter(t: string): string {
  const u = (t || "?").toUpperCase();
  return u === "LOCAL" ? "L" : u === "HCCS" ? "H" : u === "PCIE" ? "P" : u === "RDMA" ? "R" : u === "SDMA" ? "S"
    : u.startsWith("NVLINK") || u.startsWith("NCCL") ? "N" : u === "SIO" ? "I" : u.charAt(0);
}

export interface HeatmapOpts {
  ranks: number[];               // the axis (sorted)
  cells: LinkCell[];             // one per (src, dst) after the transport filter
  onOpen(src: number, dst: number): void;
}

export function linkHeatmap(o: HeatmapOpts): HTMLElement {
  const n = o.ranks.length;
  const idx = new Map(o.ranks.map((r, i) => [r, i]));
  const grid: Array<LinkCell | undefined> = new Array(n * n);
  const bws = o.cells.map((c) => c.bandwidth_gbps).filter((v): v is number => isNum(v) && v > 0);
  for (const c of o.cells) {
    const i = idx.get(c.src_rank), j = idx.get(c.dst_rank);
    if (i !== undefined && j !== undefined) grid[i * n + j] = c;
  }
  const lo = bws.length ? Math.min(...bws) : 1, hi = bws.length ? Math.max(...bws) : 1;
  const lLo = Math.log(lo), lHi = Math.log(hi);
  const scale = (v: number) => (lHi - lLo < 1e-9 ? 1 : (Math.log(v) - lLo) / (lHi - lLo));
  const transports = [...new Set(o.cells.map((c) => c.transport))].sort();
  const canvas = h("canvas", {class: "cl-canvas", tabindex: "0", role: "img", "data-role": "link-heatmap",
                              "aria-label": `Link heatmap: ${n} source ranks by ${n} destination ranks, coloured by bandwidth. Arrow keys move between cells.`});
  const tip = tooltip();
  const live = h("div", {class: "sr-only", "aria-live": "polite", "data-role": "heatmap-focus"});
  const box = h("div", {class: "cl-canvas-box"}, canvas, tip);
  const legend = h("div", {class: "legend cl-heat-legend"},
    h("span", null, `${fmtNum(lo)} GB/s `, h("span", {class: "cl-ramp", style: {background: rampCss()}}), ` ${fmtNum(hi)} GB/s (log scale)`),
    h("span", {class: "legend-gap"}, h("span", {class: "sw cl-slow-sw"}), "slow link"),
    h("span", {class: "legend-gap", "data-role": "transports"}, "Transport: ",
      transports.map((t) => `${transportLetter(t)} = ${t}`).join(", ")),
    h("span", {class: "legend-gap muted"}, "row = source rank, column = destination rank; blank = no link"));
  let focus = -1;
  let geom = {left: 40, top: 30, cell: 1};
  /** The cells drawn once (a million at 1,024 ranks); focus moves only redraw the ring over this copy. */
  let base: {key: string; img: HTMLCanvasElement} | null = null;
  const draw = () => {
    const avail = Math.max(240, Math.min((box.clientWidth || 700) - 50, 760));
    const key = `${avail}|${document.documentElement.className}|${window.devicePixelRatio}`;
    if (base && base.key === key) {
      const g = canvas.getContext("2d")!;
      g.setTransform(1, 0, 0, 1, 0, 0);
      g.clearRect(0, 0, canvas.width, canvas.height);
      g.drawImage(base.img, 0, 0);
      const dpr = window.devicePixelRatio || 1;
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      ring(g);
      return;
    }
    const cell = Math.max(n <= 64 ? 8 : 0.5, Math.min(28, avail / Math.max(1, n)));
    const left = 40, top = 30;
    const W = left + cell * n + 8, H = top + cell * n + 8;
    const g = sizeCanvas(canvas, W, H);
    geom = {left, top, cell};
    const fg = cssVar("--chart-text", "#3c4043"), empty = cssVar("--track", "#e8eaed"), worse = cssVar("--worse", "#c5221f");
    g.clearRect(0, 0, W, H);
    g.fillStyle = empty;
    g.fillRect(left, top, cell * n, cell * n);
    const pad = cell >= 4 ? 0.5 : 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const c = grid[i * n + j];
        if (!c) continue;
        const v = c.bandwidth_gbps;
        g.fillStyle = isNum(v) && v > 0 ? ramp(scale(v)) : empty;
        g.fillRect(left + j * cell + pad, top + i * cell + pad, cell - 2 * pad, cell - 2 * pad);
      }
    }
    g.font = `${Math.min(11, Math.max(8, cell * 0.55))}px system-ui, sans-serif`;
    g.textAlign = "center";
    g.textBaseline = "middle";
    if (cell >= 12) {
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
        const c = grid[i * n + j];
        if (!c) continue;
        const t = isNum(c.bandwidth_gbps) ? scale(c.bandwidth_gbps) : 0;
        g.fillStyle = t > 0.6 ? "#202124" : "#ffffff";
        g.fillText(transportLetter(c.transport), left + (j + 0.5) * cell, top + (i + 0.5) * cell);
      }
    }
    g.strokeStyle = worse;
    g.lineWidth = 2;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const c = grid[i * n + j];
      if (c?.slow) {                               // around the cell, so it shows on any colour and at 1 px cells
        const m = Math.max(cell, 5);
        g.strokeRect(left + j * cell - (m - cell) / 2 - 1, top + i * cell - (m - cell) / 2 - 1, m + 2, m + 2);
      }
    }
    g.lineWidth = 1;
    g.fillStyle = fg;
    g.font = "10px system-ui, sans-serif";
    const every = Math.max(1, Math.ceil(18 / cell));              // row labels: one per 18 px
    const everyX = Math.max(1, Math.ceil((String(o.ranks[n - 1] ?? "").length * 7 + 8) / cell));   // column labels: by their width
    const stepX = Math.max(every, Math.ceil(everyX / every) * every);
    for (let i = 0; i < n; i += every) {
      g.textAlign = "right"; g.fillText(String(o.ranks[i]), left - 4, top + (i + 0.5) * cell);
    }
    for (let i = 0; i < n; i += stepX) {
      g.textAlign = "center"; g.fillText(String(o.ranks[i]), left + (i + 0.5) * cell, top - 8);
    }
    g.textAlign = "left";
    g.fillText("dst →", left, 8);
    const img = document.createElement("canvas");
    img.width = canvas.width;
    img.height = canvas.height;
    img.getContext("2d")!.drawImage(canvas, 0, 0);
    base = {key, img};
    ring(g);
  };
  const ring = (g: CanvasRenderingContext2D) => {
    if (focus < 0) return;
    const {left, top, cell} = geom;
    const i = Math.floor(focus / n), j = focus % n;
    g.strokeStyle = cssVar("--accent", "#1a73e8"); g.lineWidth = 2;
    g.strokeRect(left + j * cell - 1, top + i * cell - 1, Math.max(cell, 3) + 2, Math.max(cell, 3) + 2);
    g.lineWidth = 1;
  };
  const describe = (i: number, j: number): string[] => {
    const c = grid[i * n + j];
    if (!c) return [`${o.ranks[i]} → ${o.ranks[j]}`, "no link"];
    return [`${c.src_rank} → ${c.dst_rank} (${c.transport})${c.slow ? " — slow" : ""}`,
      `Bandwidth ${fmtNum(c.bandwidth_gbps)} GB/s`, `Size ${fmtNum(c.size_mb)} MB, time ${fmtNum(c.time_ms)} ms`,
      ...(c.reason ? [c.reason] : [])];
  };
  const cellAt = (ev: MouseEvent): [number, number] | null => {
    const r = canvas.getBoundingClientRect();
    const j = Math.floor((ev.clientX - r.left - geom.left) / geom.cell), i = Math.floor((ev.clientY - r.top - geom.top) / geom.cell);
    return i >= 0 && j >= 0 && i < n && j < n ? [i, j] : null;
  };
  canvas.addEventListener("mousemove", (ev) => {
    const ij = cellAt(ev);
    if (!ij) { tip.hidden = true; return; }
    const r = box.getBoundingClientRect();
    placeTip(tip, box, ev.clientX - r.left, ev.clientY - r.top, describe(ij[0], ij[1]));
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const ij = cellAt(ev);
    if (ij && grid[ij[0] * n + ij[1]]) o.onOpen(o.ranks[ij[0]], o.ranks[ij[1]]);
  });
  canvas.addEventListener("keydown", (ev) => {
    const d: Record<string, [number, number]> = {ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0]};
    if (d[ev.key]) {
      ev.preventDefault();
      const i0 = focus < 0 ? 0 : Math.floor(focus / n), j0 = focus < 0 ? 0 : focus % n;
      const i = focus < 0 ? 0 : Math.max(0, Math.min(n - 1, i0 + d[ev.key][0]));
      const j = focus < 0 ? 0 : Math.max(0, Math.min(n - 1, j0 + d[ev.key][1]));
      focus = i * n + j;
      draw();
      live.textContent = describe(i, j).join("; ");
    } else if (ev.key === "Enter" && focus >= 0 && grid[focus]) {
      ev.preventDefault();
      o.onOpen(o.ranks[Math.floor(focus / n)], o.ranks[focus % n]);
    }
  });
  canvas.addEventListener("blur", () => { if (focus >= 0) { focus = -1; draw(); } });
  requestAnimationFrame(() => followTheme(canvas, draw));
  return h("div", {class: "cl-chart"}, legend, box, live);
}
