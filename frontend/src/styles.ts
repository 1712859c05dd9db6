/** The tab's CSS, injected once as a <style> element (allowed by TensorBoard's CSP). */

const CSS = `
:root{--fg:#202124;--muted:#5f6368;--line:#dadce0;--panel:#f8f9fa;--bg:#fff;--surface:#fff;--accent:#1a73e8;
--on-accent:#fff;--accent-hover:#1765cc;--hover:#f1f3f4;--head:#f1f3f4;--sel-bg:#e8f0fe;--sel-fg:#174ea6;--link:#1558b0;
--base:#1a73e8;--base-fg:#1558b0;--tgt:#e8710a;--tgt-fg:#a14f00;--worse:#c5221f;--worse-bg:#fce8e6;
--better:#137333;--better-bg:#e6f4ea;--warn-bg:#fef7e0;--warn:#8a5a00;--err-fg:#8c1d18;--err-line:#f4c7c3;
--warn-line:#fbe2a0;--warn-fg:#5c3c00;--track:#e8eaed;--rowline:#eceff1;--rowhover:#f8fbff;--rowtop:#f7f9fc;
--detail:#fafafa;--code:#3c4043;--axis:#bdc1c6;--gridline:#f1f3f4;--chart-text:#3c4043;--shadow:rgba(60,64,67,.2)}
html.dark{--fg:#ececec;--muted:#ababab;--line:#5f5f5f;--panel:#383838;--bg:#303030;--surface:#424242;--accent:#8ab4f8;
--on-accent:#202124;--accent-hover:#aecbfa;--hover:#4a4a4a;--head:#3c3c3c;--sel-bg:#394457;--sel-fg:#d2e3fc;--link:#8ab4f8;
--base:#8ab4f8;--base-fg:#8ab4f8;--tgt:#fcad70;--tgt-fg:#fcad70;--worse:#f28b82;--worse-bg:#4d2624;
--better:#81c995;--better-bg:#1f3b2a;--warn-bg:#3d3416;--warn:#fdd663;--err-fg:#f6aea9;--err-line:#8c1d18;
--warn-line:#7a5c00;--warn-fg:#fde293;--track:#4a4a4a;--rowline:#474747;--rowhover:#39404b;--rowtop:#383c44;
--detail:#353535;--code:#dadce0;--axis:#808080;--gridline:#474747;--chart-text:#dadce0;--shadow:rgba(0,0,0,.5)}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:13px/1.45 Roboto,"Helvetica Neue",Arial,sans-serif}
#compare{padding:12px 16px 32px;min-width:720px}
h2{font-size:15px;font-weight:500;margin:18px 0 8px}
h3{font-size:13px;font-weight:600;margin:12px 0 6px}
button,select,input{font:inherit;color:inherit}
button{cursor:pointer}
:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.btn{background:var(--surface);border:1px solid var(--line);border-radius:4px;padding:4px 10px;min-height:28px}
.btn:hover:not(:disabled){background:var(--hover)}
.btn:disabled{opacity:.5;cursor:default}
.btn.primary{background:var(--accent);border-color:var(--accent);color:var(--on-accent)}
.btn.primary:hover:not(:disabled){background:var(--accent-hover)}
.linkish{background:none;border:0;padding:0;color:var(--link);text-decoration:underline;cursor:pointer}
select,input[type=text],input[type=search],input[type=number]{border:1px solid var(--line);border-radius:4px;
padding:3px 6px;min-height:28px;background:var(--surface);max-width:100%}
.field{display:flex;flex-direction:column;gap:2px;min-width:0}
.field-label{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.field-label .unit{text-transform:none}
.muted{color:var(--muted)}
.pc-top{display:flex;align-items:stretch;gap:10px;flex-wrap:wrap}
.side{flex:1 1 360px;border:1px solid var(--line);border-radius:6px;padding:8px 10px;background:var(--panel);
border-top:3px solid var(--base);min-width:0}
.side.target{border-top-color:var(--tgt)}
.side-title{font-weight:600;margin-bottom:6px;display:flex;gap:8px;align-items:baseline}
.side.baseline .side-title .tag{color:var(--base-fg)} .side.target .side-title .tag{color:var(--tgt-fg)}
.side-fields{display:grid;grid-template-columns:minmax(0,1fr) minmax(110px,auto);gap:6px 8px}
.side-fields .f-run{grid-column:1 / -1}
.side-fields select{width:100%}
.side-status{margin-top:6px;min-height:18px;font-size:12px}
.swap{align-self:center}
.pc-row{display:flex;gap:12px;align-items:flex-start;margin-top:8px}
.pc-row .suggest{flex:1;margin:0}
.actions{display:flex;gap:8px;align-items:center;flex-wrap:wrap;justify-content:flex-end;max-width:50%}
a.btn{text-decoration:none;display:inline-flex;align-items:center;color:inherit}
a.btn.primary{color:var(--on-accent)}
.btn.small{min-height:22px;padding:1px 8px;font-size:12px}
table.comm thead tr:nth-child(2) th{top:27px}
table.t th.grp{text-align:center;border-bottom:2px solid var(--base)}
table.t th.grp.tgt{border-bottom-color:var(--tgt)}
.dev{display:inline-block;font-size:11px;border-radius:3px;padding:0 5px;border:1px solid var(--line);background:var(--surface)}
.suggest{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.chip{border:1px solid var(--line);background:var(--surface);border-radius:14px;padding:3px 10px}
.chip:hover{background:var(--sel-bg)}
.chip.active{background:var(--sel-bg);border-color:var(--accent)}
.pick{display:flex;flex-direction:column;gap:3px;min-width:0}
.pick-row{display:flex;gap:6px;align-items:center}
.pick-row .pick-filter{flex:1;min-width:0}
.pick-count{font-size:11px;white-space:nowrap}
.more-pairs{display:inline-block}
.more-pairs>summary{cursor:pointer;color:var(--link)}
.more-pairs[open]{display:block;flex-basis:100%}
.more-pairs .suggest{margin-top:6px}
.tabs{display:flex;gap:2px;border-bottom:1px solid var(--line);margin:14px 0 10px;flex-wrap:wrap}
.tab{background:none;border:0;border-bottom:3px solid transparent;padding:8px 14px;color:var(--muted);font-weight:500;
text-transform:uppercase;letter-spacing:.03em;font-size:12px}
.tab[aria-selected=true]{color:var(--fg);border-bottom-color:var(--accent)}
.tab:hover{color:var(--fg)}
.tab.na{opacity:.55}
.panel{border:1px solid var(--line);border-radius:6px;padding:10px 12px;background:var(--bg)}
.notice{padding:10px 12px;border-radius:6px;background:var(--panel);border:1px solid var(--line)}
.notice.error{background:var(--worse-bg);border-color:var(--err-line);color:var(--err-fg)}
.notice.warn{background:var(--warn-bg);border-color:var(--warn-line);color:var(--warn-fg)}
.notice.na{background:var(--panel)}
.progress{height:6px;background:var(--track);border-radius:3px;overflow:hidden;margin:4px 0;max-width:320px}
.progress>div{height:100%;background:var(--accent);transition:width .3s}
.progress.indet>div{width:30%!important;animation:indet 1.2s infinite linear}
@keyframes indet{from{margin-left:-30%}to{margin-left:100%}}
.err-text{color:var(--err-fg)}
.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:4px 0 10px}
.kpi{border:1px solid var(--line);border-radius:6px;padding:8px 12px;flex:1 1 150px;min-width:150px;max-width:300px}
.kpi .k{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.kpi .v{font-size:18px;font-weight:500}
.kpi .kpi-sub{font-size:11px;margin-top:2px}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:12px}
@media (max-width:1000px){.grid2{grid-template-columns:minmax(0,1fr)}}
.notes{margin:0 0 8px;padding-left:18px}
.hints{list-style:none;margin:0 0 8px;padding:0;display:flex;flex-direction:column;gap:4px}
.hints li{padding:4px 8px;border-left:3px solid var(--line);background:var(--panel)}
.hints li.worse{border-left-color:var(--worse)} .hints li.better{border-left-color:var(--better)}
.toolbar{display:flex;gap:10px;align-items:flex-end;flex-wrap:wrap;margin-bottom:8px}
.toolbar .grow{flex:1}
.pager{display:flex;gap:4px;align-items:center}
.tbl-wrap{overflow:auto;max-height:70vh;border:1px solid var(--line);border-radius:6px}
table.t{border-collapse:separate;border-spacing:0;width:100%;font-variant-numeric:tabular-nums}
table.t th,table.t td{padding:4px 8px;border-bottom:1px solid var(--rowline);text-align:left;vertical-align:top}
table.t thead th{position:sticky;top:0;background:var(--head);z-index:1;font-weight:600;
border-bottom:1px solid var(--line);vertical-align:bottom;box-shadow:0 -3px 0 var(--head)}
table.t thead th{white-space:nowrap}
table.t.dense thead th{white-space:normal}
table.t.dense thead th.num{min-width:64px;max-width:112px}
table.t.dense td.name{min-width:160px}
table.t thead th.num .sort{text-align:right;justify-content:flex-end}
table.t th.num,table.t td.num{text-align:right;white-space:nowrap}
table.t tbody tr:hover td{background:var(--rowhover)}
table.t td.name{min-width:220px;max-width:520px;overflow-wrap:break-word}
table.t td.text{min-width:90px;max-width:360px;overflow-wrap:break-word}
tr.detail table.t thead th{position:static}
th .sort{background:none;border:0;padding:0;font-weight:600;display:inline-flex;gap:3px;align-items:flex-end;color:inherit;
text-align:left}
th .sort .arrow{color:var(--muted);font-size:10px;min-width:8px}
th[aria-sort=ascending] .arrow,th[aria-sort=descending] .arrow{color:var(--accent)}
.worse{color:var(--worse)} .better{color:var(--better)}
td.worse,td.better{font-weight:500}
.row-top td{font-weight:600;background:var(--rowtop)}
.tog{background:none;border:0;width:18px;padding:0;color:var(--muted);font-size:11px}
.badge{display:inline-block;font-size:10.5px;border-radius:3px;padding:0 5px;margin-left:6px;font-weight:600;vertical-align:1px}
.badge.baseline_only{background:#e8f0fe;color:#174ea6;border:1px solid #aecbfa}
.badge.target_only{background:#feefe3;color:#8a3c00;border:1px solid #fbc896}
.badge.err{background:var(--worse-bg);color:var(--err-fg)}
tr.only-baseline td:first-child{box-shadow:inset 3px 0 var(--base)}
tr.only-target td:first-child{box-shadow:inset 3px 0 var(--tgt)}
tr.detail td{background:var(--detail)}
.stack{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;margin:2px 0 6px;padding:0;list-style:none}
.stack li{padding:1px 0}
.stack-title{font-size:11px;color:var(--muted);text-transform:uppercase}
.summary{display:flex;gap:14px;flex-wrap:wrap;font-size:12px;margin:6px 0}
.summary b{font-weight:600}
.chart{width:100%;height:auto;display:block}
.chart text{font-size:11px}
.chart text:not([fill]){fill:var(--chart-text)}
.chart text.halo{paint-order:stroke;stroke:var(--bg);stroke-width:4px;stroke-linejoin:round}
.chart .axis line,.chart .axis path{stroke:var(--axis)}
.chart .grid line{stroke:var(--gridline)}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px;margin-top:4px}
.legend span.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.legend .dash{display:inline-block;width:16px;border-top:2px dashed;margin-right:4px;vertical-align:3px}
.legend .solid{display:inline-block;width:16px;border-top:2px solid;margin-right:4px;vertical-align:3px}
.legend .ring{display:inline-block;width:9px;height:9px;border:2px solid;border-radius:50%;margin-right:4px;vertical-align:-1px}
.legend .mk-label{font-weight:600}
.chart-tools{display:flex;gap:6px;align-items:center;margin-bottom:4px;flex-wrap:wrap}
.readout{font-size:12px;color:var(--muted);min-height:18px}
.paged>.readout:empty,.summary:empty{min-height:0;margin:0}
.kern{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:12px}
.kern table{width:100%}
.kern>div{min-width:0;overflow-x:auto}
tr.detail table.t td.name{overflow-wrap:anywhere;min-width:120px}
.export-path{font-size:12px;overflow-wrap:anywhere;min-width:280px}
.segs{display:inline-flex;border:1px solid var(--line);border-radius:4px;overflow:hidden}
.seg{background:var(--surface);border:0;padding:3px 10px;min-height:26px;color:var(--muted)}
.seg+.seg{border-left:1px solid var(--line)}
.seg.on{background:var(--sel-bg);color:var(--sel-fg);font-weight:600}
.check{display:inline-flex;align-items:center;gap:4px;font-size:12px;color:var(--muted);margin-left:4px}
td .where{font-size:11.5px;overflow-wrap:anywhere}
tr.kind-op td.name .label{color:var(--code);font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
table.tree tr:not(.kind-op) td.name .label{font-weight:500}
tr.virtual td.name .label{font-style:italic}
p.intro{margin:-4px 0 8px;font-size:12px}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.pc-tools{display:flex;gap:8px;align-items:flex-start;justify-content:flex-end;max-width:60%}
.pc-tools>.actions{max-width:none}
.pc-tools .btn{white-space:nowrap}
.settings{position:relative}
.settings>summary{list-style:none;display:inline-flex;align-items:center;cursor:pointer;user-select:none}
.settings>summary::-webkit-details-marker{display:none}
.settings.on>summary{border-color:var(--accent);color:var(--sel-fg);background:var(--sel-bg)}
.settings-body{position:absolute;right:0;top:calc(100% + 4px);z-index:5;background:var(--surface);border:1px solid var(--line);
border-radius:4px;padding:8px 12px;box-shadow:0 2px 8px var(--shadow);white-space:nowrap}
.settings-body label{display:flex;align-items:center;gap:6px}
.name-maps{margin-top:8px;border-top:1px solid var(--line);padding-top:6px;white-space:normal;min-width:320px;max-width:520px}
.name-maps .map-list{list-style:none;margin:4px 0;padding:0}
.name-maps .map-list li{display:flex;align-items:center;gap:6px;padding:2px 0}
.name-maps .map-list li.on .map-name{font-weight:700}
.name-maps .small{font-size:11px;margin-top:4px}
.toolbar-group{display:contents}
.match-row{display:flex;gap:6px;align-items:center}
.match-row .current-map{white-space:nowrap;max-width:260px;overflow:hidden;text-overflow:ellipsis}
.match-msg{display:inline-block;max-width:320px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px}
.match-btn{margin-left:6px;vertical-align:baseline}
.match-pop{position:fixed;z-index:20;display:flex;flex-direction:column;background:var(--surface);
border:1px solid var(--line);border-radius:4px;box-shadow:0 2px 10px var(--shadow);padding:8px;white-space:normal}
.match-pop .pop-head{display:flex;gap:6px;align-items:center;margin-bottom:6px}
.match-pop .grow{flex:1}
.match-pop .mono,.candidates .mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:var(--code)}
.candidates{list-style:none;margin:6px 0 0;padding:0;max-height:300px;min-height:0;overflow:auto;flex:1}
.candidates .cand{display:block;width:100%;text-align:left;background:none;border:0;border-bottom:1px solid var(--line);
padding:4px 2px;cursor:pointer;color:var(--fg)}
.candidates .cand:hover,.candidates .cand:focus{background:var(--rowhover)}
ul.match-hint{margin-top:4px}
.steps-chart .gridline{stroke:var(--gridline)}
.steps-chart .muted-text{fill:var(--muted)}
.steps-chart .row-bg{fill:transparent}
.steps-chart .step-row:hover .row-bg{fill:var(--rowhover)}
.steps-chart .step-row.selected .row-bg{fill:var(--sel-bg)}
.steps-chart .row-label{fill:var(--fg)}
.steps-chart .side-tag{font-weight:700}
.steps-chart .side-tag.base{fill:var(--base-fg)} .steps-chart .side-tag.target{fill:var(--tgt-fg)}
.steps-chart .stepbar{cursor:pointer;outline:none}
.steps-chart .stepbar .hit{fill:transparent;stroke:none}
.steps-chart .stepbar:hover .hit{stroke:var(--muted);stroke-width:1}
.steps-chart .stepbar[aria-pressed=true] .hit{stroke:var(--sel-fg);stroke-width:1.5}
.steps-chart .stepbar:focus-visible .hit{stroke:var(--accent);stroke-width:2.5}
.steps-chart .unsplit{fill:var(--axis)}
.legend .sw.unsplit{background:var(--axis)}
.steps-chart-box.tall{max-height:70vh;overflow:auto}
.legend .legend-gap{margin-left:10px}
.steps-selected{display:flex;gap:6px;align-items:center;flex-wrap:wrap;margin:0 0 8px;background:var(--sel-bg);
border-color:var(--accent);color:var(--sel-fg)}
.eff-cards{margin-bottom:4px}
.eff-card dl.eff{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 16px;margin:0;align-items:baseline}
.eff-card dt{color:var(--muted);font-size:12px}
.eff-card dd{margin:0}
.eff-card .eff-v{font-size:15px;font-weight:500}
.eff-card .eff-na{font-weight:500;color:var(--muted)}
.eff-card .eff-why{font-size:11.5px;overflow-wrap:anywhere}
.eff-card .eff-delta{font-size:12px}
.eff-card .eff-window{margin-top:6px}
.eff-card .eff-notes{font-size:11.5px;margin:6px 0 0}
table.steps-metrics tr.grp-row th{background:var(--panel);font-weight:600;text-align:left;font-size:12px;color:var(--muted)}
table.steps-metrics tr.sub td.name{padding-left:24px}
table.steps-metrics tr.within-noise td{color:var(--muted)}
table.steps-metrics td.noise.beyond{font-weight:600}
.badge.rank{background:var(--sel-bg);color:var(--sel-fg);border:1px solid var(--accent)}
ol.top-diffs{counter-reset:td}
ol.top-diffs li::before{counter-increment:td;content:"#" counter(td) " ";font-weight:600;color:var(--muted)}
.tab[hidden]{display:none}
.cl-canvas-box{position:relative;overflow-x:auto}
.cl-canvas{display:block;outline:none}
.cl-canvas:focus-visible{box-shadow:0 0 0 2px var(--accent)}
.cl-tip{position:absolute;z-index:6;pointer-events:none;background:var(--surface);color:var(--fg);border:1px solid var(--line);
border-radius:4px;padding:6px 8px;font-size:12px;box-shadow:0 2px 8px var(--shadow);max-width:420px;white-space:normal}
.cl-tip-head{font-weight:600;margin-bottom:2px}
.cl-mark{color:var(--worse)}
.cl-tick{display:inline-block;width:12px;height:2px;background:var(--fg);vertical-align:middle}
.cl-ramp{display:inline-block;width:120px;height:10px;border-radius:2px;vertical-align:middle}
.sw.cl-slow-sw{background:transparent;border:2px solid var(--worse)}
.cl-heat-legend{flex-wrap:wrap}
.cl-findings .panel h3{margin-top:0}
.cl-list{margin:0;padding-left:18px}
.cl-list li{margin:4px 0}
.cl-list li.worse{color:var(--fg)}
.cl-reason{font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.cl-tools{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin:4px 0 10px}
.cl-tools a.btn{text-decoration:none;color:var(--fg);display:inline-flex;align-items:center}
tr.cl-slow td{background:var(--worse-bg)}
td.cl-flag{font-weight:600}
.badge.slow{background:var(--worse-bg);color:var(--worse);border:1px solid var(--worse);margin-left:6px}
.cl-rank{font-variant-numeric:tabular-nums}
dl.cl-cards{display:flex;flex-wrap:wrap;gap:8px 24px;margin:0 0 10px}
dl.cl-cards dt{color:var(--muted);font-size:12px}
dl.cl-cards dd{margin:0;font-size:14px;font-weight:500}
.cl-table{margin-bottom:8px}
.cl-table .pager{display:flex;gap:8px;align-items:center;margin:6px 0}
.tl-box{position:relative;overflow-y:auto;overflow-x:hidden;max-height:66vh;border:1px solid var(--line);border-radius:6px;
background:var(--bg)}
.tl-canvas{display:block;outline:none;touch-action:none;cursor:grab}
.tl-canvas:focus-visible{box-shadow:inset 0 0 0 2px var(--accent)}
.tl-toolbar .chart-tools{margin:0}
.tl-panels{margin-top:10px}
.tl-details,.tl-range-box{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--panel);min-width:0}
.tl-details h3,.tl-range h3{margin-top:0;overflow-wrap:anywhere}
.tl-dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:0 0 8px}
.tl-dl dt{color:var(--muted);font-size:12px}
.tl-dl dd{margin:0;overflow-wrap:anywhere}
.tl-cp{border-left:3px solid var(--accent);padding:4px 8px;margin:6px 0;background:var(--bg)}
.tl-actions{display:flex;gap:6px;flex-wrap:wrap;margin-top:6px}
.tl-range td.name .sw,.tl-range td.name .sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.legend .sw.tl-hatch{background:repeating-linear-gradient(45deg,var(--muted) 0 2px,transparent 2px 5px)}
.tl-link{font-size:11.5px;margin-left:6px}
.tl-link::after{content:"timeline"}
html.dark .badge.baseline_only{background:#1f3352;color:#aecbfa;border-color:#3b5a8a}
html.dark .badge.target_only{background:#47301c;color:#fcc99e;border-color:#7a4f26}
html.dark .chart [stroke="#e8eaed"],html.dark .chart [stroke="#eef0f2"]{stroke:var(--gridline)}
html.dark .chart [stroke="#9aa0a6"]{stroke:var(--axis)}
html.dark .chart [stroke="#5f6368"]{stroke:var(--muted)}
html.dark .chart rect[stroke="#fff"]{stroke:var(--bg)}
html.dark .chart circle[fill="#fff"]{fill:var(--bg)}
html.dark .chart text[fill="#3c4043"]{fill:var(--chart-text)}
html.dark .chart text[fill="#c5221f"]{fill:var(--worse)}
html.dark .chart text[fill="#137333"]{fill:var(--better)}
`;

export function injectStyles(): void {
  if (document.getElementById("pc-style")) return;
  const el = document.createElement("style");
  el.id = "pc-style";
  el.textContent = CSS;
  document.head.append(el);
}
