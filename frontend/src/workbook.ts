/**
 * The workbook button: a plain <a download> to compare/xlsx in a browser tab; inside VSCode
 * (downloads are blocked by the webview sandbox) a POST to `export`, which saves the file on
 * the server and answers its full path, shown here.
 */
import {postJSON, url} from "./api";
import {h, replace} from "./dom";
import type {State} from "./state";
import type {Env} from "./types";
import {pairParams} from "./views";

/** The TensorBoard page is framed by another origin (VSCode webview, or some proxy page). */
export function framedCrossOrigin(): boolean {
  try {
    if (window.top === window.parent) return false;
    void window.top?.location.href;
    return !window.top?.location.href;
  } catch {
    return true;
  }
}

export class Workbook {
  readonly el = h("div", {class: "actions"});
  private sig = "";

  /** `blocked`: why no workbook can be made for this pair (an unreadable side), shown on the disabled button. */
  update(st: State, env: Env | undefined, blocked: string | null = null): void {
    const sig = JSON.stringify([st.base, st.target, st.compat, st.perStep, st.nameMap, env, blocked]);
    if (sig === this.sig) return;
    this.sig = sig;
    const vscode = env?.vscode === true;
    const sandboxed = vscode || framedCrossOrigin();
    const ready = !!st.base && !!st.target && !blocked;
    const params = ready ? pairParams(st.base!, st.target!, st.compat, st.perStep) : null;
    const parts: HTMLElement[] = [];
    if (!vscode) {
      parts.push(ready
        ? h("a", {class: "btn primary", href: url("compare/xlsx", params!), download: "", role: "button",
                  "data-role": "xlsx", title: "Download the comparison as an Excel workbook"}, "⤓ Download xlsx")
        : h("button", {class: "btn", type: "button", disabled: true, "data-role": "xlsx",
                       title: blocked ? `No workbook: ${blocked}` : "Pick a baseline and a target first"}, "⤓ Download xlsx"));
    }
    if (sandboxed) {
      const out = h("div", {class: "export-path", role: "status"});
      const btn = h("button", {class: vscode ? "btn primary" : "btn", type: "button", disabled: !ready, "data-role": "export",
                               title: blocked ? `No workbook: ${blocked}`
                                 : `Save the workbook on the machine running TensorBoard${env?.export_dir ? ` (${env.export_dir})` : ""}`},
                    vscode ? "⤓ Save xlsx" : "Save xlsx on server");
      btn.addEventListener("click", async () => {
        if (!params || blocked) return;
        btn.disabled = true;
        replace(out, h("span", {class: "muted"}, "Saving…"));
        try {
          const r = await postJSON<{path?: string}>("export", params);
          const path = r?.path ?? "";
          const field = h("input", {type: "text", readOnly: true, value: path, "aria-label": "Saved workbook path",
                                    style: {width: "100%"}});
          field.addEventListener("focus", () => field.select());
          replace(out, h("span", null, "Saved to:"), field);
        } catch (e) {
          replace(out, h("span", {class: "err-text"}, `Could not save: ${(e as Error).message}`));
        } finally {
          btn.disabled = !ready;
        }
      });
      parts.push(btn, out);
    }
    replace(this.el, ...parts);
  }
}
