/*
 * panel.js -- the /clm and /lcm pages as panels in Pi's interactive mode: the model (which
 * page is shown, the selection, a setting being typed, the command each key turns into),
 * the key ids of raw terminal input when pi-tui is not at hand, and the Pi overlay
 * component that asks the bridge for pages and draws them.
 */
import { AP_OK, STATUS_NAMES } from "./abi.js";

/* ---- panels: the /clm and /lcm pages steered with keys ----------------------------------
 *
 * The plugin keeps rendering: every key that changes what is shown becomes the page
 * arguments the plugin already takes (`/clm overview ZOOM at K`, `/clm edits N`, `/clm
 * config KEY VALUE`, `/lcm settings KEY VALUE`) and the panel redraws the text it answers.
 * What the panel reads back from a page is only where the selectable rows are (the events
 * under the chart, the accepted revisions, the settings rows). host/panel.c is the same
 * model for the reference host's terminal; keep the two in step. */

export const PANEL_ZOOMS = ["fit", "requests", "turns"];

/* The key id of one chunk of terminal input when Pi's own decoder is not at hand: the
 * legacy sequences a terminal (or tmux) sends for the keys the panel uses. */
export function panelKeyOf(data) {
    const named = { "\x1b": "escape", "\r": "enter", "\n": "enter", "\x7f": "backspace", "\b": "backspace",
        "\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left", "\x1bOA": "up",
        "\x1bOB": "down", "\x1bOC": "right", "\x1bOD": "left", "\x1b[5~": "pageUp", "\x1b[6~": "pageDown",
        "\x1b[H": "home", "\x1b[F": "end", "\x03": "ctrl+c", " ": "space", "\t": "tab" };
    if (named[data]) return named[data];
    return data.length === 1 && data >= " " && data <= "~" ? data : undefined;
}

export class PanelModel {
    /* The panel for `/SUITE ARGS`, or null when that command is not a page a panel shows
     * (status, on/off, a settings change...: those stay one-shot commands). */
    static open(suite, args) {
        const w = String(args || "").trim().split(/\s+/).filter(Boolean);
        if (suite === "lcm") return w.length === 1 && w[0] === "settings" ? new PanelModel("lcm", "settings") : null;
        if (suite !== "clm" || !w.length) return null;
        if (w[0] === "settings" || (w[0] === "config" && w.length === 1)) return new PanelModel("clm", "settings");
        if (w[0] === "edits") {
            const m = new PanelModel("clm", "edits");
            if (/^\d+$/.test(w[1] || "")) { m.back = "edits"; m.view = "diff"; m.rev = Number(w[1]); }
            return m;
        }
        if (w[0] !== "overview") return null;
        const m = new PanelModel("clm", "overview");
        for (let i = 1; i < w.length; i++) {
            if (PANEL_ZOOMS.includes(w[i])) m.zoom = PANEL_ZOOMS.indexOf(w[i]);
            else if (w[i] === "at" && /^\d+$/.test(w[i + 1] || "")) m.at = Number(w[++i]);
            else if (w[i] !== "now") return null; /* the page itself says what is wrong */
        }
        return m;
    }

    constructor(suite, view) {
        this.suite = suite;
        this.view = view;       /* overview | edits | diff | settings */
        this.zoom = 0;          /* index into PANEL_ZOOMS */
        this.at = 0;            /* the selected event under the chart, 1-based; 0 = now */
        this.rev = 0;           /* the revision the diff view shows */
        this.back = null;       /* the view Esc returns to from the diff */
        this.sel = 0;           /* the selected row (edits, settings) */
        this.scroll = 0;
        this.edit = null;       /* {key, buf} while a setting's new value is typed */
        this.note = "";         /* the answer of the last change, shown in the footer */
        this.lines = [];
        this.events = [];       /* overview: {rev} per listed event (rev 0: not an edit) */
        this.rows = [];         /* edits: {line, rev}; settings: {line, key, value} */
    }

    /* The command the current view is: [name, args]. */
    request() {
        if (this.suite === "lcm") return ["lcm", "settings"];
        if (this.view === "overview")
            return ["clm", `overview ${PANEL_ZOOMS[this.zoom]}${this.at ? ` at ${this.at}` : ""}`];
        if (this.view === "diff") return ["clm", `edits ${this.rev}`];
        return ["clm", this.view];
    }

    /* Take the page the plugin answered for request(). */
    show(text) {
        this.lines = String(text ?? "").replace(/\n+$/, "").split("\n");
        this.events = [];
        this.rows = [];
        this.lines.forEach((l, i) => {
            let m;
            if (this.view === "overview" && (m = /^  [> ] (\d+)\. (.*)$/.exec(l))) {
                const r = /^revision (\d+) accepted/.exec(m[2]);
                this.events.push({ rev: r ? Number(r[1]) : 0 });
            } else if (this.view === "edits" && (m = /^revision (\d+) accepted/.exec(l))) {
                this.rows.push({ line: i, rev: Number(m[1]) });
            } else if (this.view === "settings" && (m = /^[ *]{1,3}([a-z][A-Za-z0-9]*) {2,}(\S+)/.exec(l))) {
                this.rows.push({ line: i, key: m[1], value: m[2] });
            }
        });
        if (this.view === "overview" && this.at > this.events.length) this.at = 0;
        if (this.sel >= this.rows.length) this.sel = Math.max(0, this.rows.length - 1);
    }

    /* The change one key makes: "close", "load" (ask the plugin for request() again),
     * "apply" (run this.change, then load), "draw", or null (nothing). `ch` is the
     * printable character the key types, if any. */
    key(k, ch) {
        if (this.edit) {
            if (k === "escape") { this.edit = null; return "draw"; }
            if (k === "enter") {
                const e = this.edit;
                this.edit = null;
                this.change = this.suite === "lcm" ? ["lcm", `settings ${e.key} ${e.buf}`] : ["clm", `config ${e.key} ${e.buf}`];
                return "apply";
            }
            if (k === "backspace") { this.edit.buf = this.edit.buf.slice(0, -1); return "draw"; }
            if (ch) { this.edit.buf += ch; return "draw"; }
            return null;
        }
        this.note = ""; /* the answer of a change shows until the next key */
        if (k === "q" || k === "ctrl+c") return "close";
        if (k === "escape") {
            if (this.view !== "diff") return "close";
            return this.go(this.back || "edits");
        }
        const page = 10;
        if (k === "pageUp") { this.scroll = Math.max(0, this.scroll - page); return "draw"; }
        if (k === "pageDown") { this.scroll += page; return "draw"; }
        if ((k === "up" || k === "down") && this.rows.length) {
            this.sel = Math.min(this.rows.length - 1, Math.max(0, this.sel + (k === "up" ? -1 : 1)));
            this.follow = true;
            return "draw";
        }
        if (k === "up" || k === "down") { this.scroll = Math.max(0, this.scroll + (k === "up" ? -1 : 1)); return "draw"; }
        if (this.suite === "clm" && !this.edit) {
            const views = { o: "overview", e: "edits", s: "settings" };
            if (views[k] && views[k] !== this.view) return this.go(views[k]);
        }
        if (this.view === "overview") {
            const n = this.events.length;
            if (k === "z") { this.zoom = (this.zoom + 1) % PANEL_ZOOMS.length; return "load"; }
            if (k === "left" && n) { this.at = this.at === 0 ? n : Math.max(1, this.at - 1); return "load"; }
            if (k === "right" && this.at) { this.at = this.at >= n ? 0 : this.at + 1; return "load"; }
            if (k === "enter") {
                const ev = this.at ? this.events[this.at - 1] : null;
                if (ev && ev.rev) { this.back = "overview"; this.view = "diff"; this.rev = ev.rev; this.scroll = 0; return "load"; }
                this.note = "Enter shows an accepted edit: select one with <- ->";
                return "draw";
            }
        }
        if (this.view === "edits" && k === "enter" && this.rows.length) {
            this.back = "edits"; this.view = "diff"; this.rev = this.rows[this.sel].rev; this.scroll = 0;
            return "load";
        }
        if (this.view === "settings" && k === "enter" && this.rows.length) {
            const r = this.rows[this.sel];
            this.edit = { key: r.key, buf: r.value === "unset" ? "" : r.value };
            return "draw";
        }
        return null;
    }

    go(view) {
        this.view = view;
        this.scroll = 0;
        this.sel = 0;
        return "load";
    }

    /* The panel's lines for a body of `height` rows: title, body, footer (not yet cut to a
     * width). The body scrolls; a selected row is kept in view and marked. */
    frame(height) {
        const h = Math.max(3, height);
        const row = this.rows.length ? this.rows[this.sel].line : -1;
        if (row >= 0 && this.follow) {
            if (row < this.scroll) this.scroll = row;
            if (row >= this.scroll + h) this.scroll = row - h + 1;
        }
        this.follow = false;
        this.scroll = Math.min(this.scroll, Math.max(0, this.lines.length - h));
        const [name, args] = this.request();
        const title = `/${name} ${args} -- lines ${this.scroll + 1}-${Math.min(this.lines.length, this.scroll + h)} of ${this.lines.length}`;
        const body = this.lines.slice(this.scroll, this.scroll + h).map((l, i) =>
            (this.scroll + i === row ? "> " : "  ") + l);
        const help = this.edit ? `${this.edit.key} = ${this.edit.buf}_   (Enter applies, Esc cancels)`
            : this.view === "overview" ? "z zoom  <- -> events  Enter diff of an edit  e edits  s settings  q close"
            : this.view === "edits" ? "up/down select  Enter side-by-side diff  o overview  s settings  q close"
            : this.view === "diff" ? "PgUp/PgDn scroll  Esc back  q close"
            : `up/down select  Enter change the value${this.suite === "clm" ? "  o overview  e edits" : ""}  q close`;
        return { title, body, footer: this.note ? [this.note, help] : [help] };
    }
}

/* The Pi component around a PanelModel: asks the bridge for pages, draws them in the
 * overlay, and turns keys into the model's changes. */
export class PanelComponent {
    constructor(bridge, model, tui, theme, done, tuiLib) {
        this.bridge = bridge;
        this.model = model;
        this.tui = tui;
        this.theme = theme;
        this.done = done;
        this.lib = tuiLib;
        this.load();
    }

    load() {
        const [name, args] = this.model.request();
        const r = this.bridge.invoke(name, args);
        this.model.show(r.rc === AP_OK ? r.text : `/${name} ${args}: ${r.errText || STATUS_NAMES[r.rc] || r.rc}`);
    }

    handleInput(data) {
        const k = (this.lib && this.lib.parseKey(data)) || panelKeyOf(data);
        /* What the key types (a setting's value): the character itself, with its case. */
        let ch = data.length === 1 && data >= " " && data <= "~" ? data : undefined;
        if (!ch && this.lib && this.lib.decodePrintableKey) ch = this.lib.decodePrintableKey(data);
        const what = this.model.key(k, ch);
        if (what === "close") { this.done(undefined); return; }
        if (what === "apply") {
            const [name, args] = this.model.change;
            const r = this.bridge.invoke(name, args);
            this.model.note = String((r.rc === AP_OK ? r.text : r.errText) || "").split("\n")[0];
        }
        if (what === "apply" || what === "load") this.load();
        if (what) this.tui.requestRender();
    }

    render(width) {
        const rows = (this.tui && this.tui.terminal && this.tui.terminal.rows) || 24;
        const f = this.model.frame(rows - 6);
        const cut = (s) => this.lib ? this.lib.truncateToWidth(s, width) : s.slice(0, width);
        const paint = (color, s) => { try { return this.theme.fg(color, s); } catch { return s; } };
        const rule = "-".repeat(Math.max(0, width));
        return [paint("accent", cut(f.title)), paint("border", rule), ...f.body.map(cut),
            paint("border", rule), ...f.footer.map((l) => paint("dim", cut(l)))];
    }

    invalidate() { /* every render reads the model afresh */ }
}
