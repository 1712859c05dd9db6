/**
 * The Timeline view's canvas: both sides' lanes (baseline above target) on one time axis in ms
 * from each side's origin, drawn from a `compare/timeline` answer, and hit-testing on what was
 * drawn. It owns the geometry (lane heights, the axis, the window → pixel mapping), the class
 * colours (the overview's palette) and the drawn rectangles (`drawn`, also what tests read);
 * it knows nothing of HTTP or of the pointer gestures (timelineview.ts).
 *
 * Summary blocks (many sub-pixel events merged by the server) are drawn hatched and lighter;
 * the selected item gets a ring in the foreground colour, its counterpart one in the accent.
 * Redrawing with a new window and the old answer is how "the previous picture, scaled" shows
 * while the new window is fetched: items are in ms, so they land where they belong.
 */
import {niceTicks} from "./charts";
import {FIXED_COLORS, PALETTE} from "./overview";

export type Side = "baseline" | "target";
/** [start_ms, dur_ms, class, label, id | null, extra] (docs/api.md, compare/timeline). */
export type Item = [number, number, string, string, string | null, ItemExtra];
export interface ItemExtra {
  depth?: number;
  n?: number;
  mix?: Record<string, number>;
}
export interface Lane {
  name: string;
  kind: "host" | "device" | "communication" | "free" | string;
  items: Item[];
}
export interface SideAnswer {
  lanes: Lane[];
  origin_ns?: number;
  step?: number | null;
  extent?: {start_ms: number; end_ms: number};
  items?: number;
  warnings?: string[];
}
export interface TimelineAnswer {
  baseline: SideAnswer;
  target: SideAnswer;
  window: {start_ms: number; end_ms: number};
  extent: {start_ms: number; end_ms: number};
  classes?: string[];
  step?: number | null;
  px?: number;
}

/** One drawn rectangle: what hit-testing and the tests read. */
export interface Drawn {
  side: Side;
  lane: number;
  laneName: string;
  kind: string;
  item: Item;
  x: number;
  y: number;
  w: number;
  h: number;
  summary: boolean;
}

/** The classes' colours: the overview's palette, its fixed colours for communication, free and other. */
export const CLASS_COLORS: Record<string, string> = {
  matmul: PALETTE[0], conv: PALETTE[1], flash_attention: PALETTE[2], vector: PALETTE[3], sdma: PALETTE[4],
  communication: FIXED_COLORS.communication, other: FIXED_COLORS.other, free: FIXED_COLORS.free,
  host: PALETTE[10], transmit: FIXED_COLORS.communication, wait: "#f9ab00",
};
export const CLASS_LABELS: Record<string, string> = {
  matmul: "Matmul", conv: "Conv", flash_attention: "Flash attention", vector: "Vector", communication: "Communication",
  sdma: "SDMA", other: "Other", host: "Host op", wait: "Wait", transmit: "Transmit", free: "Free",
};
/** Host ops on a dark background: the slate of the palette, lighter. */
const HOST_DARK = "#78909c";
export const classColor = (c: string): string => CLASS_COLORS[c] ?? "#757575";
export const classLabel = (c: string): string => CLASS_LABELS[c] ?? c.replace(/_/g, " ");

export const LABEL_W = 168;         // lane labels on the left
const AXIS_H = 24;
const SIDE_H = 20;                  // a side's title band
const SIDE_GAP = 10;
const DEPTH_H = 13;                 // one host depth row
const MAX_DEPTH_ROWS = 24;
const LANE_H: Record<string, number> = {device: 20, communication: 16, free: 12};
const LANE_PAD = 3;

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/** Lane heights stay put while zooming: a host lane keeps the most depth rows it has shown. */
export class LaneLayout {
  private depth = new Map<string, number>();

  reset(): void {
    this.depth.clear();
  }

  height(side: Side, lane: Lane): number {
    if (lane.kind !== "host") return LANE_H[lane.kind] ?? 16;
    const key = `${side}\u0000${lane.name}`;
    let d = 0;
    for (const it of lane.items) d = Math.max(d, it[5]?.depth ?? 0);
    d = Math.min(MAX_DEPTH_ROWS - 1, Math.max(d, this.depth.get(key) ?? 0));
    this.depth.set(key, d);
    return (d + 1) * DEPTH_H;
  }
}

export interface Highlight {
  side: Side;
  id: string;
}

export interface DrawState {
  answer: TimelineAnswer | null;
  /** The window shown (ms from the origins); may differ from the answer's while a fetch runs. */
  win: {start: number; end: number};
  width: number;
  selected: Highlight | null;
  counterpart: Highlight | null;
  range: {start: number; end: number} | null;
  sideTitles: Record<Side, string>;
}

/** Draws one state into the canvas; keeps what it drew for hit-testing. */
export class TimelineCanvas {
  readonly canvas: HTMLCanvasElement;
  readonly layout = new LaneLayout();
  drawn: Drawn[] = [];
  /** Each lane's [top, height] per side, after the last draw. */
  laneBoxes: Array<{side: Side; lane: number; name: string; y: number; h: number}> = [];
  height = 0;
  private patterns = new Map<string, CanvasPattern | null>();

  constructor() {
    this.canvas = document.createElement("canvas");
    this.canvas.className = "tl-canvas";
    this.canvas.setAttribute("data-role", "timeline-canvas");
    this.canvas.tabIndex = 0;
  }

  plotW(width: number): number {
    return Math.max(50, width - LABEL_W - 8);
  }

  /** ms → x in CSS px for this window and width. */
  x(ms: number, st: Pick<DrawState, "win" | "width">): number {
    return LABEL_W + ((ms - st.win.start) / (st.win.end - st.win.start)) * this.plotW(st.width);
  }

  /** x in CSS px → ms. */
  ms(x: number, st: Pick<DrawState, "win" | "width">): number {
    return st.win.start + ((x - LABEL_W) / this.plotW(st.width)) * (st.win.end - st.win.start);
  }

  private hatch(g: CanvasRenderingContext2D, color: string): CanvasPattern | null {
    let p = this.patterns.get(color);
    if (p !== undefined) return p;
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const pg = c.getContext("2d")!;
    pg.globalAlpha = 0.45;
    pg.fillStyle = color;
    pg.fillRect(0, 0, 6, 6);
    pg.globalAlpha = 1;
    pg.strokeStyle = color;
    pg.lineWidth = 1.5;
    pg.beginPath();
    pg.moveTo(-1, 7);
    pg.lineTo(7, -1);
    pg.moveTo(-1, 1);
    pg.lineTo(1, -1);
    pg.moveTo(5, 7);
    pg.lineTo(7, 5);
    pg.stroke();
    p = g.createPattern(c, "repeat");
    this.patterns.set(color, p);
    return p;
  }

  /** The canvas's height for this answer (lanes of both sides, the axis, the titles). */
  private measure(a: TimelineAnswer | null): number {
    let y = AXIS_H;
    for (const side of ["baseline", "target"] as Side[]) {
      y += SIDE_H;
      for (const ln of a?.[side]?.lanes ?? []) y += this.layout.height(side, ln) + LANE_PAD;
      y += SIDE_GAP;
    }
    return Math.max(y, AXIS_H + 2 * (SIDE_H + SIDE_GAP) + 40);
  }

  draw(st: DrawState): void {
    const a = st.answer;
    const W = Math.max(200, st.width);
    const H = this.measure(a);
    this.height = H;
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(W * dpr);
      c.height = Math.round(H * dpr);
      c.style.width = `${W}px`;
      c.style.height = `${H}px`;
    }
    const g = c.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const fg = cssVar("--fg", "#202124"), muted = cssVar("--muted", "#5f6368"), bg = cssVar("--bg", "#fff");
    const grid = cssVar("--gridline", "#f1f3f4"), line = cssVar("--line", "#dadce0"), panel = cssVar("--panel", "#f8f9fa");
    const accent = cssVar("--accent", "#1a73e8");
    const dark = document.documentElement.classList.contains("dark");
    const sideColor: Record<Side, string> = {baseline: cssVar("--base-fg", "#1558b0"), target: cssVar("--tgt-fg", "#a14f00")};
    g.clearRect(0, 0, W, H);
    g.fillStyle = bg;
    g.fillRect(0, 0, W, H);
    g.font = "11px Roboto, 'Helvetica Neue', Arial, sans-serif";
    g.textBaseline = "middle";
    const pw = this.plotW(W);
    const X = (ms: number) => this.x(ms, st);

    // the axis and the grid
    const ticks = niceTicks(st.win.start, st.win.end, Math.max(3, Math.floor(pw / 110)));
    const step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
    const digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
    g.strokeStyle = grid;
    g.lineWidth = 1;
    for (const t of ticks) {
      const x = Math.round(X(t)) + 0.5;
      g.beginPath();
      g.moveTo(x, AXIS_H - 4);
      g.lineTo(x, H);
      g.stroke();
    }
    g.fillStyle = muted;
    g.textAlign = "center";
    for (const t of ticks) g.fillText(t.toFixed(digits), X(t), AXIS_H / 2);
    g.textAlign = "left";
    g.fillText("ms from each side's origin", 6, AXIS_H / 2);
    g.strokeStyle = line;
    g.beginPath();
    g.moveTo(LABEL_W, AXIS_H - 0.5);
    g.lineTo(W, AXIS_H - 0.5);
    g.stroke();
    // the origin (0 ms): where both sides are aligned
    if (0 >= st.win.start && 0 <= st.win.end) {
      g.strokeStyle = muted;
      g.setLineDash([3, 3]);
      g.beginPath();
      g.moveTo(Math.round(X(0)) + 0.5, AXIS_H);
      g.lineTo(Math.round(X(0)) + 0.5, H);
      g.stroke();
      g.setLineDash([]);
    }

    this.drawn = [];
    this.laneBoxes = [];
    let y = AXIS_H;
    const rings: Array<[Drawn, string]> = [];
    for (const side of ["baseline", "target"] as Side[]) {
      g.fillStyle = panel;
      g.fillRect(0, y, W, SIDE_H);
      g.fillStyle = sideColor[side];
      g.font = "600 12px Roboto, 'Helvetica Neue', Arial, sans-serif";
      g.textAlign = "left";
      g.fillText(st.sideTitles[side], 6, y + SIDE_H / 2);
      g.font = "11px Roboto, 'Helvetica Neue', Arial, sans-serif";
      y += SIDE_H;
      const lanes = a?.[side]?.lanes ?? [];
      if (!a) {
        g.fillStyle = muted;
        g.fillText("loading…", LABEL_W + 6, y + 14);
      }
      lanes.forEach((ln, li) => {
        const lh = this.layout.height(side, ln);
        this.laneBoxes.push({side, lane: li, name: ln.name, y, h: lh});
        // the label column
        g.fillStyle = muted;
        g.textAlign = "left";
        g.save();
        g.beginPath();
        g.rect(0, y, LABEL_W - 6, lh);
        g.clip();
        g.fillText(ln.name, 6, y + Math.min(lh, 20) / 2);
        g.restore();
        g.strokeStyle = grid;
        g.beginPath();
        g.moveTo(0, y + lh + LANE_PAD / 2);
        g.lineTo(W, y + lh + LANE_PAD / 2);
        g.stroke();
        // the items, clipped to the plot
        g.save();
        g.beginPath();
        g.rect(LABEL_W, y, pw, lh);
        g.clip();
        const rowH = ln.kind === "host" ? DEPTH_H : lh;
        for (const it of ln.items) {
          const depth = ln.kind === "host" ? Math.min(it[5]?.depth ?? 0, MAX_DEPTH_ROWS - 1) : 0;
          const x0 = X(it[0]), x1 = X(it[0] + it[1]);
          if (x1 < LABEL_W - 1 || x0 > LABEL_W + pw + 1) continue;
          const left = Math.max(x0, LABEL_W - 1), right = Math.min(x1, LABEL_W + pw + 1);
          const w = Math.max(1, right - left);
          const top = y + depth * rowH + 1, hh = rowH - 2;
          const summary = !it[4] && typeof it[5]?.n === "number";
          const col = it[2] === "host" && dark ? HOST_DARK : classColor(it[2]);
          if (summary) {
            g.fillStyle = this.hatch(g, col) ?? col;
          } else {
            g.fillStyle = col;
            g.globalAlpha = it[2] === "free" ? 0.45 : 1;
          }
          g.fillRect(left, top, w > 3 ? w - 0.6 : w, hh);        // a hairline between neighbours
          g.globalAlpha = 1;
          if (!summary && w > 36 && hh >= 10) {
            g.fillStyle = "#fff";
            g.save();
            g.beginPath();
            g.rect(left + 2, top, w - 4, hh);
            g.clip();
            g.textAlign = "left";
            g.fillText(it[3], left + 3, top + hh / 2 + 0.5);
            g.restore();
          }
          const d: Drawn = {side, lane: li, laneName: ln.name, kind: ln.kind, item: it, x: left, y: top, w, h: hh, summary};
          this.drawn.push(d);
          if (it[4] && st.selected && st.selected.side === side && st.selected.id === it[4]) rings.push([d, fg]);
          if (it[4] && st.counterpart && st.counterpart.side === side && st.counterpart.id === it[4]) rings.push([d, accent]);
        }
        g.restore();
        y += lh + LANE_PAD;
      });
      if (a && !lanes.length) {
        g.fillStyle = muted;
        g.fillText("no lanes in this window", LABEL_W + 6, y + 10);
        y += 20;
      }
      y += SIDE_GAP;
    }
    for (const [d, color] of rings) {
      g.strokeStyle = color;
      g.lineWidth = 2.5;
      g.strokeRect(d.x - 2, d.y - 2, d.w + 4, d.h + 4);
      g.lineWidth = 1;
    }
    // the range being selected, or the last one
    if (st.range) {
      const x0 = Math.max(LABEL_W, X(Math.min(st.range.start, st.range.end)));
      const x1 = Math.min(LABEL_W + pw, X(Math.max(st.range.start, st.range.end)));
      if (x1 > x0) {
        g.fillStyle = accent;
        g.globalAlpha = 0.14;
        g.fillRect(x0, AXIS_H, x1 - x0, H - AXIS_H);
        g.globalAlpha = 1;
        g.strokeStyle = accent;
        g.strokeRect(x0 + 0.5, AXIS_H + 0.5, x1 - x0 - 1, H - AXIS_H - 1);
      }
    }
  }

  /** The drawn item under (x, y) in CSS px (the topmost, the smallest when several overlap), or null. */
  hit(x: number, y: number): Drawn | null {
    let best: Drawn | null = null;
    for (const d of this.drawn) {
      if (x >= d.x - 1 && x <= d.x + d.w + 1 && y >= d.y && y <= d.y + d.h) {
        if (!best || d.w < best.w) best = d;
      }
    }
    return best;
  }

  /** Where item `id` of `side` was drawn, or null. */
  find(side: Side, id: string): Drawn | null {
    return this.drawn.find((d) => d.side === side && d.item[4] === id) ?? null;
  }
}
