/** Number formatting by column type, and the regression/gain colouring rule. */
import type {Column} from "./types";

const nf = (digits: number) => new Intl.NumberFormat("en-US", {
  minimumFractionDigits: digits, maximumFractionDigits: digits,
});
const NF = [nf(0), nf(1), nf(2), nf(3)];
const INT = new Intl.NumberFormat("en-US", {maximumFractionDigits: 0});

export function isNum(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

/** A duration-like number with precision that follows its magnitude: 0.123, 12.35, 1,234.5 */
export function fmtNum(v: unknown): string {
  if (!isNum(v)) return v === null || v === undefined || v === "" ? "—" : String(v);
  const a = Math.abs(v);
  const d = a === 0 ? 0 : a < 10 ? 3 : a < 1000 ? 2 : 1;
  return NF[d].format(v);
}

/** Whether a number's text shows zero ("0.000", "-0.000"): too small to show at its precision. */
export function showsZero(t: string): boolean {
  return /^[-−+]?[0.,]+$/.test(t.trim());
}

/** A signed difference; one that rounds to zero at the shown precision gets no sign (it is no change). */
export function fmtSigned(v: unknown): string {
  if (!isNum(v)) return fmtNum(v);
  const t = fmtNum(v);
  if (showsZero(t)) return t.replace("-", "");
  return v > 0 ? "+" + t : t.replace("-", "−");
}

/** A long name shortened in the middle ("void at::native::vectorized…(int, float)"), to at most n characters. */
export function shortMiddle(t: string, n: number): string {
  if (t.length <= n) return t;
  const keep = n - 1, head = Math.ceil(keep * 0.55);
  return t.slice(0, head) + "…" + t.slice(t.length - (keep - head));
}

export function fmtCount(v: unknown): string {
  return isNum(v) ? INT.format(v) : fmtNum(v);
}

export function fmtRatio(v: unknown): string {
  if (!isNum(v)) return v === null || v === undefined ? "—" : String(v);
  if (v >= 1000) return "×" + INT.format(v);
  return "×" + NF[v < 10 ? 2 : 1].format(v);
}

export function fmtPct(v: number): string {
  return NF[Math.abs(v) < 10 ? 1 : 0].format(v) + "%";
}

export function fmtMB(bytes: unknown): string {
  return isNum(bytes) ? fmtNum(bytes / (1024 * 1024)) : fmtNum(bytes);
}

/** Memory is in binary units throughout (the server's MB are MiB, its GB GiB): said once, in MEMORY_UNITS. */
export const UNIT: Record<string, string> = {ms: "ms", us: "µs", bytes: "MiB", mb: "MiB", kb: "KiB"};
export const MEMORY_UNITS = "Memory is in binary units: 1 KiB = 1,024 bytes, 1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB.";

/** What the server's min_diff is compared with, per UI unit: bytes columns are shown (and typed) in MiB. */
export const MIN_DIFF_SCALE: Record<string, number> = {bytes: 1048576};

/**
 * Text for a cell. Ascend exports wrap shape lists over lines ("4,512;\r\n4096") and CSV
 * quoting can survive ("\"4,512\""): a line break after ";" or "," is dropped, any other
 * becomes a space, and one pair of surrounding double quotes is removed.
 */
export function cleanText(v: unknown): string {
  if (v === null || v === undefined) return "";
  let t = String(v).replace(/([;,])\s*\r?\n\s*/g, "$1").replace(/\s*\r?\n\s*/g, " ").replace(/\r/g, "");
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"') && !t.slice(1, -1).includes('"')) t = t.slice(1, -1);
  return t;
}

/** Whether a column holds a difference (signed display, coloured). */
export function isDiffKey(key: string): boolean {
  return /diff|delta/i.test(key);
}

export function fmtCell(col: Column, v: unknown): string {
  const diff = isDiffKey(col.key);
  switch (col.type) {
    case "ms":
    case "us":
    case "mb":
    case "kb":
    case "number":
      return diff ? fmtSigned(v) : fmtNum(v);
    case "bytes":
      return isNum(v) ? (diff ? fmtSigned(v / 1048576) : fmtMB(v)) : fmtNum(v);
    case "count":
      return diff && isNum(v) ? (v > 0 ? "+" : "") + fmtCount(v) : fmtCount(v);
    case "ratio":
      return fmtRatio(v);
    case "percent":
      return isNum(v) ? fmtPct(v) : fmtNum(v);
    default:
      if (isNum(v)) return diff ? fmtSigned(v) : fmtNum(v);
      return cleanText(v);
  }
}

/** "worse" (target slower / bigger), "better", or "" — for a difference or a target/baseline ratio. */
export function verdict(v: unknown, kind: "diff" | "ratio", higherIsBetter = false): "worse" | "better" | "" {
  if (!isNum(v)) return "";
  // a difference that shows as 0.000 (the finest precision shown) is no change: neutral, not red or green
  const up = kind === "diff" ? v >= 0.0005 : v > 1.005;
  const down = kind === "diff" ? v <= -0.0005 : v < 0.995;
  if (!up && !down) return "";
  return up !== higherIsBetter ? "worse" : "better";
}

/** Metrics where a larger value is good (bandwidth). */
export function higherIsBetter(name: string): boolean {
  return /bandwidth|throughput|utili[sz]ation/i.test(name);
}
