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

export function fmtSigned(v: unknown): string {
  if (!isNum(v)) return fmtNum(v);
  const t = fmtNum(v);
  return v > 0 ? "+" + t : t.replace("-", "−");
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

export const UNIT: Record<string, string> = {ms: "ms", us: "µs", bytes: "MB", mb: "MB", kb: "KB"};

/** What the server's min_diff is compared with, per UI unit: bytes columns are shown (and typed) in MB. */
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
  const up = kind === "diff" ? v > 1e-9 : v > 1.005;
  const down = kind === "diff" ? v < -1e-9 : v < 0.995;
  if (!up && !down) return "";
  return up !== higherIsBetter ? "worse" : "better";
}

/** Metrics where a larger value is good (bandwidth). */
export function higherIsBetter(name: string): boolean {
  return /bandwidth|throughput|utili[sz]ation/i.test(name);
}
