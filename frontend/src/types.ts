/** JSON shapes of the plugin's HTTP API (docs/api.md), as the UI reads them. */

export type WorkerStatus = "ok" | "error" | "not_loaded" | "loading";

export interface Worker {
  id: string;
  name: string;
  device?: string | null;
  framework?: string | null;
  format?: string | null;
  rank?: number | null;
  steps?: number[];
  has?: Record<string, boolean>;
  size_bytes?: number;
  status?: WorkerStatus | string;
  error?: string | null;
  progress?: number | null;
  warnings?: string[];
}

export interface Run {
  name: string;
  workers: Worker[];
}

export interface Pair {
  baseline: string;
  target: string;
  baseline_worker?: string | null;
  target_worker?: string | null;
  reason?: string;
}

export interface Env {
  vscode?: boolean;
  export_dir?: string;
}

export interface RunsResponse {
  runs: Run[];
  pairs?: Pair[];
  pairs_left_off?: number;   // suggestions the server's bounds left off (issue 21)
  scanned_at?: number | null;
  error?: string | null;
  env?: Env;
}

/** One entry of the `analyses` route: an analysis the server's registry can page as `compare/<name>`. */
export interface AnalysisInfo {
  name: string;
  label?: string;
  description?: string;
  needs?: string[];
  outputs?: string[];
  tree?: boolean;
}

export interface SideFigure {
  duration_ms?: number | null;
  count?: number | null;
}

export interface Kernel {
  name: string;
  duration_ms?: number | null;
  count?: number | null;
  side?: "baseline" | "target";
}

export interface MetricRow {
  name: string;
  depth?: number;
  baseline?: SideFigure | null;
  target?: SideFigure | null;
  diff_ms?: number | null;
  ratio?: number | null;
  unit?: string;
  kernels?: Kernel[] | { baseline?: Kernel[]; target?: Kernel[] };
}

export interface SideInfo {
  run?: string;
  worker?: string;
  device?: string;
  format?: string;
  step?: number | null;
  steps?: number[];
}

export interface Column {
  key: string;
  label: string;
  type: string;
}

export type Row = Record<string, unknown>;

export interface TablePage {
  columns: Column[];
  rows: Row[];
  total: number;
  total_unfiltered?: number;
  offset: number;
  limit: number;
  summary?: Record<string, unknown> | null;
  diff_col?: string;         // the column min_diff filters on (and the default sort), when the server says
  sort?: string | null;      // the order the server applied (its default when none was asked)
  order?: string | null;
  figures?: Figures | null;  // the per-step choice the figures follow (null: per-call figures)
  note?: string;             // what the table is made of, when it is not the usual (e.g. a MindSpore scope tree)
  notes?: string[];          // why a side has nothing in this view
}

/** What a comparison's totals were divided by (docs/api.md `figures`). */
export interface Figures {
  per_step: boolean;
  divisor?: {baseline?: number; target?: number};
  steps_count?: {baseline?: number | null; target?: number | null};
  note?: string;
}

export interface OverallResponse {
  baseline: SideInfo;
  target: SideInfo;
  overall_metrics: MetricRow[];
  communication?: MetricRow[] | Row[] | { columns: Column[]; rows: Row[] };
  notes?: string[];
  per_step?: boolean;
  per_step_available?: boolean;
  steps_count?: {baseline?: number | null; target?: number | null};
  memory?: {baseline?: Record<string, number | string | null>; target?: Record<string, number | string | null>};
  bandwidth?: {baseline?: Record<string, number | null>; target?: Record<string, number | null>};
}

export interface Peak {
  t_ms?: number;
  allocated_mb?: number;
  reserved_mb?: number;
  [k: string]: unknown;
}

export interface CurveSide {
  t_ms: number[];
  allocated_mb?: number[];
  reserved_mb?: number[];
  peak?: Peak | Peak[] | null;
  component?: string | null;
  component_label?: string | null;
}

export interface MemoryCurve {
  baseline?: CurveSide | null;
  target?: CurveSide | null;
  attribution?: Row[];
  attribution_columns?: Column[];
  notes?: string[];
}
