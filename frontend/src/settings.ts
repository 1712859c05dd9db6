/**
 * The tab's settings, beside the workbook button: the "reference figures" switch, which asks
 * every comparison route for msprof-analyze compatible figures (`reference_compat=1`) and is
 * kept in the URL state.
 */
import {h} from "./dom";
import type {State} from "./state";

export interface SettingsHandlers {
  onCompat(on: boolean): void;
}

export class Settings {
  readonly el: HTMLElement;
  private readonly compat: HTMLInputElement;
  private readonly summary: HTMLElement;

  constructor(handlers: SettingsHandlers) {
    this.compat = h("input", {type: "checkbox", "data-role": "reference-compat"}) as HTMLInputElement;
    this.compat.addEventListener("change", () => handlers.onCompat(this.compat.checked));
    this.summary = h("summary", {class: "btn", title: "Settings of the comparison"}, "⚙ Settings");
    this.el = h("details", {class: "settings"}, this.summary,
                h("div", {class: "settings-body"},
                  h("label", {class: "switch", title: "The figures msprof-analyze compare reports, for matching reports made "
                                                      + "with it (sent to the server as reference_compat=1)"},
                    this.compat, " Reference figures",
                    h("span", {class: "muted"}, " (msprof-analyze compatible)"))));
  }

  update(st: State): void {
    this.compat.checked = st.compat;
    const on = [st.compat ? "Reference figures" : "", st.nameMap ? `map ${st.nameMap}` : ""].filter(Boolean);
    this.el.classList.toggle("on", on.length > 0);
    this.summary.textContent = on.length ? `⚙ ${on.join(", ")}` : "⚙ Settings";
  }
}
