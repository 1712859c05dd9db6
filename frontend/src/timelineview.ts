/**
 * The Timeline view: the baseline's lanes above the target's on one time axis in ms from each
 * side's origin (the start of the chosen step, or of a matched item: `align=<side>:<id>`), drawn
 * on a canvas (timelinecanvas.ts) from `compare/timeline` windows the server reduces to what the
 * canvas width can show.
 *
 * Gestures: the wheel zooms around the pointer, a drag pans, a shift-drag (or a drag in Range
 * mode) selects a range whose per-class totals `compare/timeline/range` gives for both sides;
 * hovering shows an item's name, duration, shapes and stream; a click asks
 * `compare/timeline/item` for its details, rings its matched counterpart on the other side
 * (brought into view) and links to its row in the Operator or Kernel view. Each zoom or pan
 * redraws the answer in hand at once (scaled) and fetches the new window ~100 ms after the last
 * gesture; an answer to an older request is dropped.
 *
 * Its URL state is its table query: `sub` = "align:<side>:<id>" (aligned on that item) or
 * "find:<side>:<kernel|operator>" with `q` = a name (opened from a table row: the first such
 * item of the step is found, selected and the sides aligned on it).
 */
import {getJSON, isLoading, shownSignal, Stale, url} from "./api";
import {h, replace, sleep} from "./dom";
import {fmtNum, fmtSigned, isNum} from "./format";
import type {ViewCtx, ViewDef} from "./registry";
import {CLASS_LABELS, classColor, classLabel, type Drawn, type Highlight, type Item, LABEL_W, type Side,
        TimelineCanvas, type TimelineAnswer} from "./timelinecanvas";
import {currentNameMap, failure, progressBox} from "./views";

const FETCH_DELAY_MS = 100;
const MIN_SPAN_MS = 1e-4;

interface ItemAnswer {
  side: Side;
  id: string;
  name: string;
  kind?: string;
  cls?: string;
  dur_ms?: number;
  start_ms?: number;
  shapes?: string;
  stream?: number;
  step?: number | null;
  task_type?: string;
  group?: string;
  pid?: number;
  tid?: number;
  depth?: number;
  bytes?: number;
  launch_op?: {id: string; name: string} | null;
  counterpart?: {side: Side; id: string; exact?: boolean; start_ms?: number; dur_ms?: number; name?: string} | null;
  /** The table row it opens: `key` is what that view's search finds the row by (a Kernel row: its kernel and shapes). */
  links?: {view: string; key: string; kernel?: string; shapes?: string} | null;
  /** A kernel's row in the Operator view: its launching op's, or the nearest enclosing op's the view lists. */
  op_link?: {view: string; key: string} | null;
}

type RangeAnswer = Record<string, unknown> & {
  baseline?: Record<string, number>;
  target?: Record<string, number>;
  window?: Record<Side, {start_ms: number; end_ms: number}>;
};

/** GET a JSON route until it is ready (202: polled); `alive()` false → Stale. No caching: windows are big. */
async function getReady<T>(u: string, alive: () => boolean): Promise<T> {
  const signal = shownSignal();
  let wait = 250;
  for (;;) {
    if (!alive()) throw new Stale();
    const r = await getJSON<T>(u, signal);
    if (!alive()) throw new Stale();
    if (!isLoading(r)) return r;
    await sleep(wait);
    wait = Math.min(1500, wait * 1.5);
  }
}

interface Find {
  side: Side;
  kind: string;
  /** A kernel's or operator's name as its table row names it (an NPU Kernel row: the kernel's Type, e.g. MatMulV2). */
  name: string;
  /** The row's input shapes ("" any). */
  shapes: string;
}

function parseState(ctx: ViewCtx): {align: string | null; find: Find | null} {
  const sub = ctx.query.sub || "";
  const m = /^align:(baseline|target):([kotc]\d+)$/.exec(sub);
  if (m) return {align: `${m[1]}:${m[2]}`, find: null};
  const f = /^find:(baseline|target):(kernel|operator)$/.exec(sub);
  if (f && ctx.query.q) {
    const [name, shapes] = ctx.query.q.split("\t");
    return {align: null, find: {side: f[1] as Side, kind: f[2], name, shapes: shapes ?? ""}};
  }
  return {align: null, find: null};
}

/** The step both sides are shown at: the pickers' (the baseline's when they differ), else the server's default. */
function pickedStep(ctx: ViewCtx): number | null {
  return ctx.base.step ?? ctx.target.step ?? null;
}

function commonSteps(ctx: ViewCtx): number[] {
  const b = ctx.worker("base")?.steps ?? [], t = new Set(ctx.worker("target")?.steps ?? []);
  return b.filter((s) => t.has(s));
}

const RANGE_ORDER = ["computing", "matmul", "conv", "flash_attention", "vector", "sdma", "other", "communication",
                     "wait", "transmit", "free", "range"];
const RANGE_LABELS: Record<string, string> = {computing: "Computing", communication: "Communication (uncovered)",
                                              free: "Free", range: "Range (E2E)"};

function rangeTable(a: RangeAnswer, scope: "range" | "step"): HTMLElement {
  const b = a.baseline ?? {}, t = a.target ?? {};
  const keys = [...new Set([...Object.keys(b), ...Object.keys(t)])].filter((k) => isNum(b[k]) || isNum(t[k]));
  keys.sort((x, y) => (RANGE_ORDER.indexOf(x) + 1 || 99) - (RANGE_ORDER.indexOf(y) + 1 || 99) || x.localeCompare(y));
  const win = a.window;
  const wtxt = (s: Side) => (win?.[s] ? `${fmtNum(win[s].start_ms)} – ${fmtNum(win[s].end_ms)} ms` : "");
  return h("div", {class: "tl-range", "data-role": "timeline-range", "data-scope": scope},
    h("h3", null, scope === "step" ? `Step ${a.step ?? ""} totals` : "Range totals"),
    win ? h("p", {class: "muted intro"}, `Baseline ${wtxt("baseline")}, target ${wtxt("target")} (from each side's origin).`) : null,
    h("table", {class: "t", "aria-label": "Per-class totals of the range"},
      h("thead", null, h("tr", null, h("th", {scope: "col"}, "Class"), h("th", {class: "num", scope: "col"}, "Baseline (ms)"),
                                     h("th", {class: "num", scope: "col"}, "Target (ms)"), h("th", {class: "num", scope: "col"}, "Diff (ms)"))),
      h("tbody", null, ...keys.map((k) => {
        const d = isNum(b[k]) && isNum(t[k]) ? t[k] - b[k] : null;
        return h("tr", {"data-class": k, class: k === "range" || k === "computing" ? "row-top" : ""},
          h("td", {class: "name"}, CLASS_LABELS[k] ? h("span", {class: "sw", style: {background: classColor(k)}}) : null,
            RANGE_LABELS[k] ?? classLabel(k)),
          h("td", {class: "num"}, fmtNum(b[k])), h("td", {class: "num"}, fmtNum(t[k])),
          h("td", {class: "num " + (d === null || Math.abs(d) < 5e-4 ? "" : d > 0 ? "worse" : "better")}, d === null ? "—" : fmtSigned(d)));
      }))));
}

function legend(): HTMLElement {
  const shown = ["matmul", "conv", "flash_attention", "vector", "communication", "sdma", "other", "host", "wait", "transmit", "free"];
  return h("div", {class: "legend", "data-role": "timeline-legend"},
    ...shown.map((c) => h("span", {"data-class": c}, h("span", {class: "sw", style: {background: classColor(c)}}), classLabel(c))),
    h("span", null, h("span", {class: "sw tl-hatch"}), "Summary block (many short events)"));
}

async function render(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const {align, find} = parseState(ctx);
  const step = pickedStep(ctx);
  const pair = {baseline: ctx.base.worker, target: ctx.target.worker};
  const tc = new TimelineCanvas();
  let answer: TimelineAnswer | null = null;
  let win = {start: 0, end: 1};
  let extent = {start: 0, end: 1};
  let selected: Highlight | null = null;
  let counterpart: Highlight | null = null;
  let range: {start: number; end: number} | null = null;
  let rangeMode = false;
  let seq = 0, fetches = 0, timer = 0;
  let lastUrl = "";
  const itemCache = new Map<string, ItemAnswer>();
  const alive = () => ctx.alive() && host.isConnected;

  const status = h("span", {class: "readout", "data-role": "timeline-status", "aria-live": "polite"});
  const box = h("div", {class: "tl-box"});
  const tip = h("div", {class: "cl-tip tl-tip", role: "tooltip", hidden: true});
  const details = h("div", {class: "tl-details", "data-role": "timeline-details"},
                    h("p", {class: "muted"}, "Click an item for its details and its matched counterpart on the other side."));
  const rangeBox = h("div", {class: "tl-range-box"},
                     h("p", {class: "muted"}, "Shift-drag (or drag in Range mode) across the lanes for both sides' totals per class."));
  box.append(tc.canvas, tip);

  const baseTitle = (side: Side) => {
    const w = side === "baseline" ? ctx.base.worker : ctx.target.worker;
    const st = answer?.[side]?.step ?? answer?.step ?? step;
    const how = align ? (align.startsWith(side) ? `aligned on ${align.slice(align.indexOf(":") + 1)}` : "aligned on its counterpart")
      : st !== null && st !== undefined ? `step ${st}` : "whole capture";
    return `${side === "baseline" ? "Baseline" : "Target"} · ${w} · ${how}`;
  };
  const width = () => Math.max(320, Math.floor(box.clientWidth || host.clientWidth || 960));

  function draw(): void {
    tc.draw({answer, win, width: width(), selected, counterpart, range,
             sideTitles: {baseline: baseTitle("baseline"), target: baseTitle("target")}});
    tc.canvas.dataset.startMs = String(win.start);
    tc.canvas.dataset.endMs = String(win.end);
    tc.canvas.dataset.fetches = String(fetches);
  }

  function statusText(loading: boolean): void {
    const n = answer ? (answer.baseline.items ?? 0) + (answer.target.items ?? 0) : 0;
    status.textContent = `${fmtNum(win.start)} – ${fmtNum(win.end)} ms · ${n} items drawn` + (loading ? " · loading…" : "");
  }

  function params(extra: Record<string, string | number | null>): Record<string, string | number | null> {
    return {...pair, step, align, name_map: currentNameMap() || null, ...extra};
  }

  /** Fetch the current window (now); an answer to an older request is dropped. */
  async function fetchWindow(px = tc.plotW(width())): Promise<boolean> {
    const my = ++seq;
    fetches += 1;
    const u = url("compare/timeline", params({start_ms: +win.start.toFixed(6), end_ms: +win.end.toFixed(6), px: Math.round(px)}));
    lastUrl = u;
    statusText(true);
    try {
      const a = await getReady<TimelineAnswer>(u, () => alive() && my === seq);
      if (my !== seq || !alive()) return false;
      answer = a;
      draw();
      statusText(false);
      return true;
    } catch (e) {
      if (e instanceof Stale || my !== seq) return false;
      status.textContent = `Could not load this window: ${(e as Error).message}`;
      return false;
    }
  }

  function scheduleFetch(): void {
    clearTimeout(timer);
    timer = window.setTimeout(() => void fetchWindow(), FETCH_DELAY_MS);
  }

  function setWindow(a: number, b: number): void {
    const full = extent.end - extent.start;
    let span = Math.max(MIN_SPAN_MS, b - a);
    span = Math.min(span, Math.max(full * 4, MIN_SPAN_MS));
    const lo = extent.start - full * 1.5, hi = extent.end + full * 1.5;
    a = Math.max(lo, Math.min(a, hi - span));
    win = {start: a, end: a + span};
    draw();
    statusText(true);
    scheduleFetch();
  }

  const zoom = (f: number, at?: number) => {
    const c = at ?? (win.start + win.end) / 2;
    setWindow(c - (c - win.start) * f, c + (win.end - c) * f);
  };

  // -- the details of a clicked item and its counterpart ---------------------------------------
  async function item(side: Side, id: string): Promise<ItemAnswer> {
    const key = `${side}:${id}`;
    const hit = itemCache.get(key);
    if (hit) return hit;
    const a = await getReady<ItemAnswer>(url("compare/timeline/item", params({side, id})), alive);
    if (itemCache.size > 200) itemCache.delete(itemCache.keys().next().value as string);
    itemCache.set(key, a);
    return a;
  }

  /** Bring an item [start, start + dur) into the window (zooming out just enough), refetching. */
  function showSpan(a: number, b: number): void {
    if (a >= win.start && b <= win.end) return;
    const span = win.end - win.start;
    const lo = Math.min(a, win.start), hi = Math.max(b, win.end);
    if (hi - lo <= span) setWindow(lo, lo + span);
    else if (b - a < span) setWindow(a - (span - (b - a)) / 2, b + (span - (b - a)) / 2);
    else setWindow(a - (b - a) * 0.1, b + (b - a) * 0.1);
  }

  function scrollToLane(side: Side, id: string): void {
    const d = tc.find(side, id);
    if (!d) return;
    const top = d.y - 30, bottom = d.y + d.h + 30;
    if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) box.scrollTop = Math.max(0, top);
  }

  async function select(side: Side, id: string): Promise<void> {
    selected = {side, id};
    counterpart = null;
    draw();
    replace(details, h("p", {class: "muted"}, "Loading the item…"));
    let a: ItemAnswer;
    try {
      a = await item(side, id);
    } catch (e) {
      if (e instanceof Stale || !alive()) return;
      replace(details, failure("This item", e));
      return;
    }
    if (!alive() || selected?.id !== id || selected.side !== side) return;
    const cp = a.counterpart ?? null;
    counterpart = cp ? {side: cp.side, id: cp.id} : null;
    showDetails(a);
    draw();
    if (cp && isNum(cp.start_ms)) {
      const start = cp.start_ms, dur = isNum(cp.dur_ms) ? cp.dur_ms : 0;
      if (start < win.start || start + dur > win.end) showSpan(start, start + dur);
      requestAnimationFrame(() => scrollToLane(cp.side, cp.id));
    }
  }

  function showDetails(a: ItemAnswer): void {
    const cp = a.counterpart ?? null;
    const other = cp?.side === "baseline" ? "baseline" : "target";
    const rows: Array<[string, string | HTMLElement | null]> = [
      ["Side", a.side === "baseline" ? "Baseline" : "Target"],
      ["Class", a.cls ? classLabel(a.cls) : null],
      ["Duration", isNum(a.dur_ms) ? `${fmtNum(a.dur_ms)} ms` : null],
      ["Start", isNum(a.start_ms) ? `${fmtNum(a.start_ms)} ms from the origin` : null],
      ["Input shapes", a.shapes || null],
      ["Stream", isNum(a.stream) ? String(a.stream) : null],
      ["Thread", isNum(a.tid) ? `${a.pid ?? ""}/${a.tid}` : null],
      ["Step", isNum(a.step) ? String(a.step) : null],
      ["Task type", a.task_type || null],
      ["Group", a.group || null],
      ["Launched by", a.launch_op?.name ?? null],
    ];
    const view = a.links?.view;
    const viewName = view === "kernel" ? "Kernel" : view === "operator" ? "Operator" : view === "communication" ? "Communication" : view;
    const link = view && ctx.available.has(view)
      ? h("button", {class: "btn small", type: "button", "data-role": "timeline-open-row", "data-view": view, "data-name": a.links!.key,
                     onClick: () => ctx.onView(view, undefined, {q: a.links!.key})}, `Open in the ${viewName} view`)
      : view ? h("span", {class: "muted"}, `(the ${viewName} view is not available for this pair)`) : null;
    // a kernel's operator (its launching op, or the enclosing op the Operator view lists): its row there
    const opName = a.op_link?.key;
    const opLink = opName && ctx.available.has("operator")
      ? h("button", {class: "btn small", type: "button", "data-role": "timeline-open-op", "data-view": "operator", "data-name": opName,
                     onClick: () => ctx.onView("operator", undefined, {q: opName})}, `Its operator ${opName} in the Operator view`)
      : null;
    const cpBox = cp
      ? h("div", {class: "tl-cp", "data-role": "timeline-counterpart", "data-side": cp.side, "data-id": cp.id},
          h("b", null, `Matched on the ${other}: `), cp.name ?? cp.id,
          isNum(cp.dur_ms) ? ` · ${fmtNum(cp.dur_ms)} ms` : "",
          isNum(cp.dur_ms) && isNum(a.dur_ms) ? h("span", {class: (a.side === "target" ? a.dur_ms - cp.dur_ms : cp.dur_ms - a.dur_ms) > 0 ? " worse" : " better"},
            ` (target − baseline ${fmtSigned(a.side === "target" ? a.dur_ms - cp.dur_ms : cp.dur_ms - a.dur_ms)} ms)`) : null,
          isNum(cp.start_ms) ? ` · starts at ${fmtNum(cp.start_ms)} ms` : "",
          cp.exact === false ? h("div", {class: "muted"}, "No exact counterpart: this is the matched operator that encloses it.") : null,
          h("div", {class: "tl-actions"},
            h("button", {class: "btn small", type: "button", "data-role": "timeline-show-counterpart",
                         onClick: () => void select(cp.side, cp.id)}, "Select the counterpart"),
            h("button", {class: "btn small", type: "button", "data-role": "timeline-align",
                         onClick: () => ctx.onQuery({...ctx.query, sub: `align:${a.side}:${a.id}`, q: ""}, true)},
              "Align both sides here")))
      : h("p", {class: "muted", "data-role": "timeline-counterpart", "data-side": ""}, "No matched counterpart on the other side.");
    replace(details,
      h("h3", {class: "tl-name"}, a.name),
      h("dl", {class: "tl-dl"}, ...rows.filter(([, v]) => v !== null && v !== "").flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)])),
      cpBox, h("div", {class: "tl-actions"}, link, opLink));
  }

  // -- ranges --------------------------------------------------------------------------------
  async function fetchRange(r: {start: number; end: number} | null): Promise<void> {
    const p: Record<string, number | null> = r ? {start_ms: +Math.min(r.start, r.end).toFixed(6), end_ms: +Math.max(r.start, r.end).toFixed(6)}
      : {start_ms: null, end_ms: null};
    replace(rangeBox, h("p", {class: "muted"}, "Totalling the range…"));
    try {
      const a = await getReady<RangeAnswer>(url("compare/timeline/range", params(p)), alive);
      if (!alive()) return;
      replace(rangeBox, rangeTable(a, r ? "range" : "step"));
    } catch (e) {
      if (e instanceof Stale || !alive()) return;
      replace(rangeBox, failure("The range totals", e));
    }
  }

  // -- pointer gestures ------------------------------------------------------------------------
  const local = (ev: MouseEvent) => {
    const r = tc.canvas.getBoundingClientRect();
    const sx = r.width ? tc.canvas.offsetWidth / r.width : 1;        // a scaled frame (VSCode: 0.8)
    const sy = r.height ? tc.canvas.offsetHeight / r.height : 1;
    return {x: (ev.clientX - r.left) * sx, y: (ev.clientY - r.top) * sy};
  };
  let drag: {x: number; y: number; start: typeof win; range: boolean; moved: boolean} | null = null;

  tc.canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const p = local(ev);
    const at = p.x >= LABEL_W ? tc.ms(p.x, {win, width: width()}) : undefined;
    const f = Math.pow(1.0015, Math.max(-400, Math.min(400, ev.deltaY * (ev.deltaMode === 1 ? 30 : 1))));
    zoom(f, at);
  }, {passive: false});

  tc.canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    const p = local(ev);
    drag = {x: p.x, y: p.y, start: {...win}, range: rangeMode || ev.shiftKey, moved: false};
    tc.canvas.setPointerCapture(ev.pointerId);
    tip.hidden = true;
  });
  tc.canvas.addEventListener("pointermove", (ev) => {
    const p = local(ev);
    if (drag) {
      if (Math.abs(p.x - drag.x) > 3) drag.moved = true;
      if (!drag.moved) return;
      const msPerPx = (drag.start.end - drag.start.start) / tc.plotW(width());
      if (drag.range) {
        range = {start: tc.ms(Math.max(LABEL_W, drag.x), {win, width: width()}), end: tc.ms(Math.max(LABEL_W, p.x), {win, width: width()})};
        draw();
      } else {
        const dx = (p.x - drag.x) * msPerPx;
        win = {start: drag.start.start - dx, end: drag.start.end - dx};
        draw();
        statusText(true);
      }
      return;
    }
    const d = tc.hit(p.x, p.y);
    tc.canvas.style.cursor = d ? "pointer" : rangeMode ? "crosshair" : "grab";
    if (!d) {
      tip.hidden = true;
      return;
    }
    showTip(d, p.x, p.y);
  });
  tc.canvas.addEventListener("pointerup", (ev) => {
    if (!drag) return;
    const p = local(ev);
    const dr = drag;
    drag = null;
    if (!dr.moved) {
      const d = tc.hit(p.x, p.y);
      if (d?.item[4]) void select(d.side, d.item[4]);
      else if (d?.summary) zoom(Math.max(0.05, (d.item[1] * 1.6) / (win.end - win.start)), d.item[0] + d.item[1] / 2);
      return;
    }
    if (dr.range) {
      if (range && Math.abs(range.end - range.start) > 0) void fetchRange(range);
    } else setWindow(win.start, win.end);
  });
  tc.canvas.addEventListener("pointerleave", () => { tip.hidden = true; });
  tc.canvas.addEventListener("keydown", (ev) => {
    const span = win.end - win.start;
    if (ev.key === "+" || ev.key === "=") zoom(0.5);
    else if (ev.key === "-") zoom(2);
    else if (ev.key === "ArrowLeft") setWindow(win.start - span * 0.2, win.end - span * 0.2);
    else if (ev.key === "ArrowRight") setWindow(win.start + span * 0.2, win.end + span * 0.2);
    else return;
    ev.preventDefault();
  });

  let tipFor = "";
  function showTip(d: Drawn, x: number, y: number): void {
    const it: Item = d.item;
    const lines: Array<string | HTMLElement> = [];
    const key = `${d.side}:${it[4] ?? ""}:${it[0]}`;
    const head = it[3] || classLabel(it[2]);
    lines.push(h("div", {class: "cl-tip-head"}, head));
    lines.push(`${d.side === "baseline" ? "Baseline" : "Target"} · ${classLabel(it[2])} · ${fmtNum(it[1])} ms · at ${fmtNum(it[0])} ms`);
    lines.push(`${d.kind === "device" ? "Stream" : "Lane"}: ${d.laneName}`);
    if (d.summary) {
      const mix = Object.entries(it[5].mix ?? {}).sort((p, q) => q[1] - p[1]).map(([c, v]) => `${classLabel(c)} ${fmtNum(v)} ms`);
      lines.push(`${it[5].n} items merged (click to zoom in)`);
      if (mix.length) lines.push(`Mix: ${mix.join(", ")}`);
    } else if (it[4]) {
      const known = itemCache.get(`${d.side}:${it[4]}`);
      if (known?.shapes) lines.push(`Shapes: ${known.shapes}`);
      else if (!known) {
        const id = it[4];
        window.setTimeout(() => {
          if (tipFor !== key || tip.hidden) return;
          void item(d.side, id).then((a) => {
            if (tipFor !== key || tip.hidden || !a.shapes) return;
            tip.append(h("div", null, `Shapes: ${a.shapes}`));
            placeTip(x, y);
          })
            .catch(() => undefined);
        }, 200);
      }
    }
    tipFor = key;
    tip.replaceChildren(...lines.map((l) => (typeof l === "string" ? h("div", null, l) : l)));
    tip.hidden = false;
    placeTip(x, y);
  }

  function placeTip(x: number, y: number): void {
    const bw = box.clientWidth, tw = tip.offsetWidth, th = tip.offsetHeight;
    tip.style.left = `${Math.max(0, Math.min(bw - tw - 4, x + 12))}px`;
    // below the pointer, or above it when the frame's viewport (or the lanes' box) ends first
    const below = y + 14 - box.scrollTop;
    tip.style.top = `${below}px`;
    const tr = tip.getBoundingClientRect(), br = box.getBoundingClientRect();
    const k = th ? tr.height / th : 1;                                   // a scaled frame (VSCode: 0.8)
    if (tr.bottom > Math.min(window.innerHeight, br.bottom) && tr.top - (28 + th) * k >= Math.max(0, br.top)) {
      tip.style.top = `${below - 28 - th}px`;
    }
  }

  // -- the toolbar ------------------------------------------------------------------------------
  const steps = commonSteps(ctx);
  const stepSel = h("select", {"aria-label": "Step", "data-role": "timeline-step"}) as HTMLSelectElement;
  stepSel.append(h("option", {value: ""}, "first common step"));
  for (const s of steps) stepSel.append(h("option", {value: String(s)}, `Step ${s}`));
  stepSel.value = step !== null && steps.includes(step) ? String(step) : "";
  stepSel.addEventListener("change", () => {
    const v = stepSel.value === "" ? null : Number(stepSel.value);
    ctx.onSteps(v, v);
  });
  const modeBtn = (label: string, on: boolean, title: string, role: string) =>
    h("button", {class: "seg" + (on ? " on" : ""), type: "button", "aria-pressed": String(on), "data-role": role, title}, label);
  const panBtn = modeBtn("Pan", true, "Drag pans; shift-drag selects a range", "timeline-mode-pan");
  const rangeBtn = modeBtn("Range", false, "Drag selects a range (its totals per class)", "timeline-mode-range");
  const setMode = (r: boolean) => {
    rangeMode = r;
    panBtn.classList.toggle("on", !r);
    rangeBtn.classList.toggle("on", r);
    panBtn.setAttribute("aria-pressed", String(!r));
    rangeBtn.setAttribute("aria-pressed", String(r));
  };
  panBtn.addEventListener("click", () => setMode(false));
  rangeBtn.addEventListener("click", () => setMode(true));
  const toolbar = h("div", {class: "toolbar tl-toolbar"},
    h("label", {class: "field"}, h("span", {class: "field-label"}, "Step"), stepSel),
    h("div", {class: "field"}, h("span", {class: "field-label"}, "Drag"), h("div", {class: "segs", role: "group", "aria-label": "Drag mode"}, panBtn, rangeBtn)),
    h("div", {class: "chart-tools"},
      h("button", {class: "btn", type: "button", "data-role": "timeline-zoom-in", onClick: () => zoom(0.5)}, "Zoom in"),
      h("button", {class: "btn", type: "button", "data-role": "timeline-zoom-out", onClick: () => zoom(2)}, "Zoom out"),
      h("button", {class: "btn", type: "button", "data-role": "timeline-reset", onClick: () => setWindow(extent.start, extent.end)}, "Whole step"),
      h("button", {class: "btn", type: "button", "data-role": "timeline-step-totals", title: "Each side's totals over its own step window",
                   onClick: () => { range = null; draw(); void fetchRange(null); }}, "Step totals"),
      align ? h("button", {class: "btn", type: "button", "data-role": "timeline-unalign",
                           onClick: () => ctx.onQuery({...ctx.query, sub: "", q: ""}, true)}, "Align on the step start") : null),
    h("div", {class: "grow"}), status);

  // -- first answer ---------------------------------------------------------------------------
  replace(host, progressBox("Building the timeline", null));
  const frame = h("div", {class: "tl-view"}, toolbar,
    h("p", {class: "muted intro"}, "Wheel: zoom around the pointer · drag: pan · shift-drag: range totals · click: details and the matched counterpart."),
    legend(), box, h("div", {class: "grid2 tl-panels"}, details, rangeBox));
  let first: TimelineAnswer;
  try {
    const probe = () => alive() || ctx.alive();
    first = await getReady<TimelineAnswer>(url("compare/timeline", params({px: 1000})), probe);
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure("The timeline", e));
    return;
  }
  if (!ctx.alive()) return;
  extent = {start: first.extent.start_ms, end: first.extent.end_ms};
  if (!(extent.end > extent.start)) extent.end = extent.start + 1;
  win = {start: extent.start, end: extent.end};
  replace(host, frame);
  answer = first;
  fetches = 1;
  draw();
  statusText(false);
  // the answer was for 1000 px: the canvas's own width now
  if (Math.abs(tc.plotW(width()) - 1000) > 2) await fetchWindow();

  let shownW = width();
  const ro = new ResizeObserver(() => {
    if (!host.isConnected) { ro.disconnect(); return; }
    if (width() === shownW) return;
    shownW = width();
    draw();
    scheduleFetch();
  });
  ro.observe(box);
  const mo = new MutationObserver(() => { if (!host.isConnected) mo.disconnect(); else draw(); });
  mo.observe(document.documentElement, {attributes: true, attributeFilter: ["class"]});

  // a test and debugging hook: the window, the requests and what was drawn
  (window as unknown as {__tbcTimeline?: unknown}).__tbcTimeline = {
    get window() { return {...win}; },
    get fetches() { return fetches; },
    get lastUrl() { return lastUrl; },
    get selected() { return selected; },
    get counterpart() { return counterpart; },
    get range() { return range; },
    get labelWidth() { return LABEL_W; },
    items: (filter?: {side?: Side; cls?: string; label?: string}) => tc.drawn
      .filter((d) => (!filter?.side || d.side === filter.side) && (!filter?.cls || d.item[2] === filter.cls) &&
                     (!filter?.label || d.item[3] === filter.label))
      .slice(0, 5000)
      .map((d) => ({side: d.side, lane: d.laneName, kind: d.kind, start: d.item[0], dur: d.item[1], cls: d.item[2],
                    label: d.item[3], id: d.item[4], summary: d.summary, x: d.x, y: d.y, w: d.w, h: d.h})),
    select: (side: Side, id: string) => select(side, id),
  };

  if (align) {
    const [side, id] = [align.slice(0, align.indexOf(":")) as Side, align.slice(align.indexOf(":") + 1)];
    void select(side, id);
  } else if (find) {
    await findItem(find);
  }

  /** Opened from a table row: the first item of that row (name as the row shows it, and its shapes) on that side, selected and aligned on. */
  async function findItem(f: Find): Promise<void> {
    let a: ItemAnswer & {id: string | null};
    try {
      a = await getReady<ItemAnswer & {id: string | null}>(url("compare/timeline/find", params({
        side: f.side, kind: f.kind === "kernel" ? "kernel" : "op", name: f.name, shapes: f.shapes || null})), alive);
    } catch (e) {
      if (e instanceof Stale || !alive()) return;
      replace(details, failure("Finding the row's item", e));
      return;
    }
    if (!alive()) return;
    if (!a.id) {
      replace(details, h("div", {class: "notice", role: "status", "data-state": "not-found"},
        `No ${f.kind} “${f.name}”${f.shapes ? ` with input shapes ${f.shapes}` : ""} on the ${f.side}.`));
      return;
    }
    itemCache.set(`${f.side}:${a.id}`, a);
    openFound(f.side, a.id, a, isNum(a.start_ms) ? a.start_ms : null, isNum(a.dur_ms) ? a.dur_ms : 0);
  }

  /** A found item: both sides aligned on it when it has a counterpart (the view draws anew and selects it), else centred. */
  function openFound(side: Side, id: string, det: ItemAnswer | null, start: number | null, dur: number): void {
    if (det?.counterpart) {
      ctx.onQuery({...ctx.query, sub: `align:${side}:${id}`, q: ""}, true);
      return;
    }
    if (start !== null) setWindow(start - Math.max(dur * 4, 0.05), start + dur + Math.max(dur * 4, 0.05));
    void select(side, id);
  }
}

export const timelineView: ViewDef = {
  name: "timeline", label: "Timeline",
  renderKey: (ctx) => [ctx.query.sub, ctx.query.q],
  render,
};

/** The "timeline" button of a table row (Operator, Kernel): opens the Timeline at the first item of that name. */
export function timelineLink(ctx: ViewCtx, kind: "kernel" | "operator", name: string, status: unknown,
                             shapes = ""): HTMLElement | null {
  if (!name) return null;
  const side: Side = status === "target_only" ? "target" : "baseline";
  // its word is CSS content: the cell's text (what copying and the tests read) stays the name
  return h("button", {class: "linkish tl-link", type: "button", "data-role": "timeline-link", "aria-label": `timeline: ${name}`,
                      title: `Open the Timeline at the first ${kind} “${name}” of the step (${side})`,
                      onClick: (ev: Event) => {
                        ev.stopPropagation();
                        ctx.onView("timeline", undefined, {sub: `find:${side}:${kind}`, q: shapes ? `${name}\t${shapes}` : name});
                      }});
}

