// SPDX-License-Identifier: MIT
/*
 * ustack flamegraph: a self-contained, interactive SVG flame graph of a
 * trace (through the report's folded stacks) or of any folded file
 * (FlameGraph's "frame;frame;frame count" lines, e.g. from
 * `ustack snapshot --format folded`). Click a frame to zoom into it, click
 * the bottom frame or "Reset zoom" to zoom out, "Search" highlights frames
 * matching a regular expression.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out_names.h"
#include "cli/report_lookup.h"
#include "cli/report_weight.h"

#define WIDTH 1200.0
#define ROW 16
#define PAD_TOP 50
#define PAD_SIDE 10
#define MIN_WIDTH 0.1 /* px: narrower frames are not drawn */
/*
 * Frames kept per stack (the stackmap's depth limit): the tree is walked
 * recursively when drawn, and a folded line of a million frames would
 * overflow the C stack; deeper frames are dropped with a warning.
 */
#define MAX_STACK_DEPTH 4096
/* a trace file's first 8 bytes (docs/trace-format.md): how --diff tells a
 * trace from a folded file */
#define TRACE_MAGIC "\x7fUSTACK\n"

/* one source line a frame was seen at, and its samples */
struct srcline {
	char *where; /* "file.c:12" */
	uint64_t count;
	struct srcline *next;
};

struct node {
	char *name;
	int inlined; /* the frame ended in FlameGraph's "_[i]" */
	uint64_t count;   /* samples drawn: the profile, or B (after) of a diff */
	uint64_t count_a; /* a diff's A (before) samples */
	struct srcline *lines; /* most frames have one or two */
	struct node *child, *next; /* children in first-seen order */
};

static struct node *node_new(const char *name, size_t len, int inlined)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->name = strndup(name, len))) {
		free(n);
		return NULL;
	}
	n->inlined = inlined;
	return n;
}

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		node_free(n->child);
		while (n->lines) {
			struct srcline *l = n->lines->next;

			free(n->lines->where);
			free(n->lines);
			n->lines = l;
		}
		free(n->name);
		free(n);
		n = next;
	}
}

/*
 * Split one folded frame "func[ file.c:12][_[i]]" into the function, its
 * source line (perf's and 'ustack report --srcline' form: a last word
 * "NAME:DIGITS") and the inlined mark. The line is not part of the frame's
 * identity: one box per function, its tooltip lists the lines seen in it.
 */
static void split_frame(const char *tok, size_t len, size_t *name_len, const char **where,
			size_t *where_len, int *inlined)
{
	size_t e = len, d, sp;

	*inlined = 0;
	*where = NULL;
	*where_len = 0;
	if (e >= 4 && !memcmp(tok + e - 4, "_[i]", 4)) {
		*inlined = 1;
		e -= 4;
	}
	*name_len = e;
	/* a Python frame of report's folded output: "py::NAME (BASE:LINE)" */
	if (e > 4 && !memcmp(tok, "py::", 4) && tok[e - 1] == ')') {
		for (sp = e - 1; sp > 4 && memcmp(tok + sp - 2, " (", 2); sp--)
			;
		if (sp > 4) {
			*name_len = sp - 2;
			*where = tok + sp;
			*where_len = e - 1 - sp;
		}
		return;
	}
	for (d = e; d > 0 && tok[d - 1] >= '0' && tok[d - 1] <= '9'; d--)
		;
	if (d == e || d < 2 || tok[d - 1] != ':')
		return;
	for (sp = d - 1; sp > 0 && tok[sp - 1] != ' ' && tok[sp - 1] != ';'; sp--)
		;
	/* "NAME:DIGITS" needs a NAME and a function before the space */
	if (sp < 2 || sp == d - 1 || tok[sp - 1] != ' ')
		return;
	*name_len = sp - 1;
	*where = tok + sp;
	*where_len = e - sp;
}

static int node_add_line(struct node *n, const char *where, size_t len, uint64_t count)
{
	struct srcline **pp = &n->lines;

	while (*pp && (strlen((*pp)->where) != len || memcmp((*pp)->where, where, len)))
		pp = &(*pp)->next;
	if (!*pp) {
		struct srcline *l = calloc(1, sizeof(*l));

		if (!l || !(l->where = strndup(where, len))) {
			free(l);
			return -ENOMEM;
		}
		*pp = l;
	}
	(*pp)->count += count;
	return 0;
}

/*
 * Add "a;b;c" with @count below @root: to the drawn counts, or with @before
 * to a diff's A counts (their source lines are not kept: the tooltips
 * describe the drawn profile).
 */
static int tree_add(struct node *root, char *stack, uint64_t count, int before,
		    unsigned long *deep)
{
	struct node *cur = root;
	int depth = 0;

	*(before ? &root->count_a : &root->count) += count;
	for (char *tok = stack, *semi; tok && *tok; tok = semi ? semi + 1 : NULL) {
		struct node **pp = &cur->child;
		size_t len, nlen, wlen;
		const char *where;
		int inl;

		if (++depth > MAX_STACK_DEPTH) {
			(*deep)++;
			break;
		}
		semi = strchr(tok, ';');
		len = semi ? (size_t)(semi - tok) : strlen(tok);
		split_frame(tok, len, &nlen, &where, &wlen, &inl);
		while (*pp && ((*pp)->inlined != inl || strlen((*pp)->name) != nlen ||
			       memcmp((*pp)->name, tok, nlen)))
			pp = &(*pp)->next;
		if (!*pp && !(*pp = node_new(tok, nlen, inl)))
			return -ENOMEM;
		cur = *pp;
		*(before ? &cur->count_a : &cur->count) += count;
		if (!before && where && node_add_line(cur, where, wlen, count))
			return -ENOMEM;
	}
	return 0;
}

/* Parse folded lines; malformed ones are counted, not fatal. */
static int read_folded(FILE *f, struct node *root, unsigned long *bad, unsigned long *deep,
		       int before)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	while (!ret && (n = getline(&line, &cap, f)) > 0) {
		char *sp, *end;
		unsigned long long count;

		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (!n)
			continue;
		sp = strrchr(line, ' ');
		if (!sp || sp == line) {
			(*bad)++;
			continue;
		}
		count = strtoull(sp + 1, &end, 10);
		if (*end || !count) {
			(*bad)++;
			continue;
		}
		*sp = 0;
		ret = tree_add(root, line, count, before, deep);
	}
	free(line);
	return ret;
}

/* nodes a diff has only in A are not drawn (sized by B) and take no height */
static int tree_depth(const struct node *n)
{
	int d = 0;

	for (const struct node *c = n->child; c; c = c->next) {
		int cd = c->count ? tree_depth(c) : 0;

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

/*
 * Names as XML 1.0 (out_names.h, OUT_NAME_XML): < > & " ' as entities,
 * control characters and bytes that are not UTF-8 as U+FFFD. XML admits
 * nothing else: a single stray byte (a name from a damaged binary, Latin-1
 * in a folded file) makes the browser show a parse error instead of the
 * graph, and a '<' would open an element. Names go only into the text of
 * <title> and <text> elements; the script reads them back as text
 * (textContent), never as markup.
 */
static void xml_escape(FILE *out, const char *s)
{
	out_name_put(out, OUT_NAME_XML, s);
}

/* the first @max characters of @s, as XML (a character: a UTF-8
 * sequence, or one U+FFFD); returns how many were written */
static size_t xml_escape_n(FILE *out, const char *s, size_t max)
{
	return out_name_put_chars(out, OUT_NAME_XML, s, max);
}

/* characters (not bytes) of @s, as the SVG's script counts them */
static size_t utf8_chars(const char *s)
{
	return out_name_chars(s);
}

/* FlameGraph's warm palette, stable per name; inlined frames in its aqua
 * (as flamegraph.pl --colors java paints "_[i]" frames); Python frames
 * ("py::" from report) in its blue, a language's frames apart from the
 * native code that runs them, as its java and js palettes do */
static void color_of(const char *name, int inlined, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	if (!strncmp(name, "py::", 4)) {
		*r = 80 + (int)(h % 55);
		*g = 80 + (int)((h >> 8) % 60);
		*b = 190 + (int)((h >> 16) % 55);
		return;
	}
	if (inlined) {
		*r = 50 + (int)(h % 60);
		*g = 165 + (int)((h >> 8) % 55);
		*b = 165 + (int)((h >> 16) % 55);
		return;
	}
	*r = 205 + (int)(h % 50);
	*g = (int)((h >> 8) % 230);
	*b = (int)((h >> 16) % 55);
}

/*
 * What the widths count: samples (FlameGraph's default), nanoseconds (an
 * off-CPU or --wall trace, folded input with --countname ns), or what
 * --countname says of folded input. Tooltips, the legend and the closing
 * line say it: "kfunc_b (3.500 ms, 87.50%)".
 */
struct wunit {
	uint32_t unit;     /* USTACK_TRACE_EV_UNIT_* */
	const char *name;  /* --countname of a count; NULL: report_unit_name() */
};

static void put_weight(FILE *out, const struct wunit *u, uint64_t w, int xml)
{
	char buf[48];

	if (u->unit != USTACK_TRACE_EV_UNIT_NS && u->name) {
		fprintf(out, "%llu ", (unsigned long long)w);
		if (xml)
			xml_escape(out, u->name);
		else
			out_name_put(out, OUT_NAME_LINE, u->name);
		return;
	}
	fputs(report_fmt_weight(buf, sizeof(buf), u->unit, w), out);
}

/* a diff's change: the sign, then the weight */
static void put_change(FILE *out, const struct wunit *u, double v)
{
	fputc(v < 0 ? '-' : '+', out);
	put_weight(out, u, (uint64_t)(v < 0 ? -v : v), 1);
}

/* the tooltip's source lines: the most sampled first, a few at most */
#define MAX_TIP_LINES 8

static void emit_lines(FILE *out, const struct node *n, const struct wunit *wu)
{
	const struct srcline *shown[MAX_TIP_LINES];
	size_t nshown = 0, total = 0;

	for (const struct srcline *l = n->lines; l; l = l->next, total++) {
		size_t i = nshown < MAX_TIP_LINES ? nshown++ : MAX_TIP_LINES;

		if (i == MAX_TIP_LINES && l->count <= shown[MAX_TIP_LINES - 1]->count)
			continue;
		if (i == MAX_TIP_LINES)
			i--;
		for (; i > 0 && shown[i - 1]->count < l->count; i--)
			shown[i] = shown[i - 1];
		shown[i] = l;
	}
	for (size_t i = 0; i < nshown; i++) {
		fputs("\nat ", out);
		xml_escape(out, shown[i]->where);
		if (total > 1) {
			fputs(" (", out);
			put_weight(out, wu, shown[i]->count, 1);
			fputc(')', out);
		}
	}
	if (total > nshown)
		fprintf(out, "\n(%zu more lines)", total - nshown);
}

/*
 * A differential graph (--diff A B): boxes sized by B, colored by how the
 * samples that end in the frame (its self samples) changed from A to B, as
 * FlameGraph's flamegraph.pl does with difffolded.pl's two columns. Self,
 * not inclusive: a parent's inclusive change is the sum of its children's,
 * so coloring by it would paint every caller of a grown function red and
 * hide where the growth is.
 */
struct diff {
	double fa;     /* A counts are multiplied by this: B's total / A's (1 without normalizing) */
	double max;    /* largest |self delta| of a drawn frame, in B samples */
	int normalize;
};

static double self_of(const struct node *n, int before)
{
	uint64_t s = before ? n->count_a : n->count;

	for (const struct node *c = n->child; c; c = c->next)
		s -= before ? c->count_a : c->count;
	return (double)s;
}

static double self_delta(const struct node *n, const struct diff *d)
{
	return self_of(n, 0) - d->fa * self_of(n, 1);
}

static void diff_max(const struct node *n, struct diff *d)
{
	double v = self_delta(n, d);

	if (!n->count)
		return;
	if (v < 0)
		v = -v;
	if (v > d->max)
		d->max = v;
	for (const struct node *c = n->child; c; c = c->next)
		diff_max(c, d);
}

/*
 * FlameGraph's scale: red for growth, blue for a loss, the more saturated
 * the larger the change relative to the largest one; unchanged frames are a
 * neutral light grey (FlameGraph paints them white, invisible on our
 * background).
 */
static void color_diff(double delta, const struct diff *d, int *r, int *g, int *b)
{
	double v = d->max > 0 ? delta / d->max : 0;
	int c;

	if (v > 1)
		v = 1;
	if (v < -1)
		v = -1;
	if (v > -1e-9 && v < 1e-9) {
		*r = *g = *b = 235;
		return;
	}
	c = (int)(235.0 - 215.0 * (v < 0 ? -v : v) + 0.5);
	if (v > 0)
		*r = 255, *g = *b = c;
	else
		*r = *g = c, *b = 255;
}

static void emit_diff_tip(FILE *out, const struct node *n, const struct node *root,
			  const struct diff *d, const struct wunit *wu)
{
	double pa = root->count_a ? 100.0 * n->count_a / root->count_a : 0;

	fputs("\nbefore: ", out);
	put_weight(out, wu, n->count_a, 1);
	fprintf(out, ", %.2f%%", pa);
	if (d->normalize)
		/* shares of each profile's own total: A scaled to B's size */
		fprintf(out, "\nchange: %+.2f%% of total (self %+.2f%%)",
			100.0 * n->count / root->count - pa,
			100.0 * self_delta(n, d) / root->count);
	else if (wu->unit == USTACK_TRACE_EV_UNIT_COUNT && !wu->name)
		fprintf(out, "\nchange: %+.0f samples (self %+.0f)",
			(double)n->count - (double)n->count_a, self_delta(n, d));
	else {
		fputs("\nchange: ", out);
		put_change(out, wu, (double)n->count - (double)n->count_a);
		fputs(" (self ", out);
		put_change(out, wu, self_delta(n, d));
		fputc(')', out);
	}
}

/* 3 decimals: the script finds a frame's callees by their x range */
static double r3(double v)
{
	return (double)(int64_t)(v * 1000.0 + (v < 0 ? -0.5 : 0.5)) / 1000.0;
}

struct emit_ctx {
	FILE *out;
	const struct node *root;
	const struct diff *diff; /* NULL: an ordinary flame graph */
	const struct wunit *wu;
	int height;
	double scale;
};

static void emit_node(const struct emit_ctx *e, const struct node *n, double x, int depth)
{
	FILE *out = e->out;
	double w = n->count * e->scale, cx = x;
	/* both edges rounded from the same doubles as the neighbours' edges,
	 * so adjacent frames meet exactly in the file too */
	double rx = r3(x), rw = r3(x + w) - rx;
	int r, g, b;
	double y = PAD_TOP + (double)(e->height - depth - 1) * ROW;

	if (w < MIN_WIDTH)
		return;
	if (e->diff) {
		color_diff(self_delta(n, e->diff), e->diff, &r, &g, &b);
	} else if (depth > 0) { /* depth 0 is the synthetic "all" root, drawn too */
		color_of(n->name, n->inlined, &r, &g, &b);
	} else {
		r = 220, g = 220, b = 220;
	}
	/* the title's first line is "name (N samples, P%)" (the script takes
	 * the name from it: all before the last " ("); then the diff's
	 * counts, "inlined" and the source lines. data-n: the samples, for
	 * the search's matched share */
	fprintf(out, "<g class=\"f\" data-n=\"%llu\"><title>", (unsigned long long)n->count);
	xml_escape(out, n->name);
	fputs(" (", out);
	put_weight(out, e->wu, n->count, 1);
	fprintf(out, ", %.2f%%)", 100.0 * n->count / e->root->count);
	if (e->diff)
		emit_diff_tip(out, n, e->root, e->diff, e->wu);
	if (n->inlined)
		fputs("\ninlined", out);
	emit_lines(out, n, e->wu);
	fprintf(out, "</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" "
		     "height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.3f\" y=\"%.1f\">",
		rx, y, rw, ROW - 1, r, g, b, rx + 3, y + ROW - 4.5);
	/*
	 * What fits at 7px a character, cut with "..": viewers without
	 * scripts show this; the script measures the text and cuts again.
	 * Characters, not bytes, so a cut never splits a UTF-8 sequence.
	 */
	if (w > 21) {
		size_t fit = (size_t)((w - 6) / 7), len = utf8_chars(n->name);

		if (len <= fit) {
			xml_escape(out, n->name);
		} else if (fit > 2) {
			xml_escape_n(out, n->name, fit - 2);
			fputs("..", out);
		}
	}
	fputs("</text></g>\n", out);
	for (const struct node *c = n->child; c; c = c->next) {
		emit_node(e, c, cx, depth + 1);
		cx += c->count * e->scale;
	}
}

/*
 * Zoom: the clicked frame spans the width, its callees scale with it, its
 * callers (the frames below whose x range holds it) span the width faded
 * (class "parent"), every other frame is hidden (class "hide"). Search:
 * matching frames get class "match"; the matched share counts each sample
 * once (a match called from a match is inside its range). Labels are cut
 * to what the measured text width allows.
 */
static const char script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"var frames, X0, W, TOT, E = 1e-3, searching = false;\n"
"function rect(g) { return g.querySelector('rect'); }\n"
"function init() {\n"
"  frames = [].slice.call(document.querySelectorAll('g.f'));\n"
"  frames.forEach(function (g) {\n"
"    var r = rect(g), t = g.querySelector('title').textContent.split('\\n')[0], i = t.lastIndexOf(' (');\n"
"    g.dataset.x = r.getAttribute('x'); g.dataset.w = r.getAttribute('width'); g.dataset.y = r.getAttribute('y');\n"
"    g.dataset.name = i >= 0 ? t.substring(0, i) : t;\n"
"    g.onclick = function () { zoom(g); };\n"
"    g.onmouseover = function () { details(t); };\n"
"    g.onmouseout = function () { details(''); };\n"
"    label(g, parseFloat(g.dataset.w));\n"
"  });\n"
"  X0 = parseFloat(frames[0].dataset.x); W = parseFloat(frames[0].dataset.w); TOT = parseFloat(frames[0].dataset.n);\n"
"  document.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
"    else if (e.key === 'Escape') reset();\n"
"  });\n"
"}\n"
"function details(s) { document.getElementById('details').textContent = s; }\n"
"function label(g, w) {\n"
"  var t = g.querySelector('text'), name = g.dataset.name, n = Array.from(name), room = w - 6, c;\n"
"  if (room < 15) { t.textContent = ''; return; }\n"
"  c = Math.min(n.length, Math.floor(room / 7));\n"
"  for (;;) {\n"
"    if (c < 3 && c < n.length) { t.textContent = ''; return; }\n"
"    t.textContent = c >= n.length ? name : n.slice(0, c - 2).join('') + '..';\n"
"    if (t.getComputedTextLength() <= room) return;\n"
"    c = Math.min(c, n.length) - 1;\n"
"  }\n"
"}\n"
"function fit(g, x, w) {\n"
"  var r = rect(g);\n"
"  r.setAttribute('x', x); r.setAttribute('width', w);\n"
"  g.querySelector('text').setAttribute('x', x + 3);\n"
"  label(g, w);\n"
"}\n"
"function zoom(z) {\n"
"  if (z === frames[0]) { reset(); return; }\n"
"  var zx = +z.dataset.x, zw = +z.dataset.w, zy = +z.dataset.y, s = W / zw;\n"
"  frames.forEach(function (g) {\n"
"    var x = +g.dataset.x, w = +g.dataset.w, y = +g.dataset.y;\n"
"    g.classList.remove('parent', 'hide');\n"
"    if (!(x < zx + zw - E && x + w > zx + E)) { g.classList.add('hide'); return; }\n"
"    if (y > zy) { g.classList.add('parent'); fit(g, X0, W); return; }\n"
"    fit(g, X0 + (x - zx) * s, w * s);\n"
"  });\n"
"  document.getElementById('reset').classList.remove('off');\n"
"}\n"
"function reset() {\n"
"  frames.forEach(function (g) { g.classList.remove('parent', 'hide'); fit(g, +g.dataset.x, +g.dataset.w); });\n"
"  document.getElementById('reset').classList.add('off');\n"
"}\n"
"function search(q) {\n"
"  if (q === undefined) {\n"
"    q = searching ? '' : prompt('Search (regular expression)', '');\n"
"    if (q === null) return;\n"
"  }\n"
"  var re = null, n = 0, tops = [], sum = 0, m = document.getElementById('matched');\n"
"  if (q !== '') {\n"
"    try { re = new RegExp(q); } catch (err) { m.textContent = 'Bad regular expression: ' + q; return; }\n"
"  }\n"
"  frames.forEach(function (g) {\n"
"    var hit = re !== null && re.test(g.dataset.name), x = +g.dataset.x, w = +g.dataset.w;\n"
"    g.classList.toggle('match', hit);\n"
"    if (!hit) return;\n"
"    n++;\n"
"    for (var i = 0; i < tops.length; i++)\n"
"      if (x > tops[i][0] - E && x + w < tops[i][1] + E) return;\n"
"    tops.push([x, x + w]); sum += +g.dataset.n;\n"
"  });\n"
"  searching = re !== null;\n"
"  document.getElementById('search').textContent = searching ? 'Clear search' : 'Search';\n"
"  m.textContent = searching ? 'Matched: ' + (100 * sum / TOT).toFixed(2) + '% (' + n + ' frames)' : '';\n"
"}\n"
"]]></script>\n";

static int render(FILE *out, const struct node *root, const char *title, const struct diff *diff,
		  const struct wunit *wu)
{
	int height = tree_depth(root);
	struct emit_ctx e = {
		.out = out, .root = root, .diff = diff, .wu = wu, .height = height,
		.scale = (WIDTH - 2 * PAD_SIDE) / (double)root->count,
	};
	int svg_h = PAD_TOP + height * ROW + 30;

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" onload=\"init()\" "
		     "viewBox=\"0 0 %.0f %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		     "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
		     "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		     "g.f.match rect { fill: rgb(230,0,230); }\n"
		     "g.f.hide { display: none; }\n"
		     "g.f.parent { opacity: 0.5; }\n"
		     "#title { font-size: 17px; } .btn { cursor: pointer; } #reset.off { opacity: 0.3; }</style>\n",
		WIDTH, svg_h, WIDTH, svg_h);
	fputs(script, out);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		     "<text id=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">",
		WIDTH / 2);
	xml_escape(out, title);
	fputs("</text>\n", out);
	if (diff)
		fprintf(out, "<text id=\"legend\" x=\"%.0f\" y=\"42\" text-anchor=\"middle\">"
			     "widths: after (B); red: self samples grew, blue: shrank%s</text>\n",
			WIDTH / 2, diff->normalize ? " (A scaled to B's total)" : " (not normalized)");
	else if (wu->unit != USTACK_TRACE_EV_UNIT_COUNT || wu->name) {
		/* widths that are not samples say so under the title */
		fprintf(out, "<text id=\"legend\" x=\"%.0f\" y=\"42\" text-anchor=\"middle\">"
			     "widths: %s; ", WIDTH / 2,
			wu->unit == USTACK_TRACE_EV_UNIT_NS ? "time"
			: wu->name ? "weight"
			: wu->unit == USTACK_TRACE_EV_UNIT_BYTES ? "bytes allocated"
			: wu->unit == REPORT_UNIT_OBJECTS ? "allocations (estimated count)" : "weight");
		put_weight(out, wu, root->count, 1);
		fputs(" in all</text>\n", out);
	}
	fprintf(out, "<text id=\"reset\" class=\"btn off\" x=\"%d\" y=\"24\" "
		     "onclick=\"reset()\">Reset zoom</text>\n"
		     "<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" onclick=\"search()\">"
		     "Search</text>\n<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"></text>\n"
		     "<text id=\"details\" x=\"%d\" y=\"%d\"></text>\n",
		PAD_SIDE, WIDTH - PAD_SIDE, WIDTH - PAD_SIDE, svg_h - 10, PAD_SIDE, svg_h - 10);
	emit_node(&e, root, PAD_SIDE, 0);
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack flamegraph [-i TRACE | --folded FILE | FILE] [-o OUT.svg] [--title TEXT]\n"
		"                         [--inline] [--no-lines] [--python-only] [--debug-dir DIR]\n"
		"                         [--symfs DIR]\n"
		"                         [--buildid-dir DIR]... [--no-buildid-cache]\n"
		"                         [--event NAME[,NAME]] [--wall] [--countname NAME]\n"
		"                         [--view VIEW] [--at TIME]\n"
		"       ustack flamegraph --diff A B [--no-normalize] [-o OUT.svg] [--title TEXT] ...\n"
		"\n"
		"Write a self-contained, interactive SVG flame graph (click to zoom,\n"
		"search by regular expression) of a trace's stacks, as counted by\n"
		"'ustack report --format folded', or of a folded file ('-' for stdin),\n"
		"e.g. from 'ustack snapshot -p PID --format folded'.\n"
		"\n"
		"  -i, --input TRACE   trace file (default ustack.data)\n"
		"  -f, --folded FILE   folded stacks instead of a trace\n"
		"  FILE                either, told apart by the trace's magic\n"
		"  -o, --output FILE   SVG file (default ustack.svg; '-' for stdout)\n"
		"  -t, --title TEXT    title (default: the input's name)\n"
		"      --inline        inlined functions as frames of their own (tooltip: inlined)\n"
		"      --no-lines      no source lines in the tooltips (no DWARF read; faster)\n"
		"      --python-only   a trace's Python frames alone where a stack has them\n"
		"                      (as 'ustack report --python-only'); they are blue\n"
		"      --debug-dir DIR separate debug files (default /usr/lib/debug)\n"
		"      --symfs DIR, --buildid-dir DIR, --no-buildid-cache\n"
		"                      where the trace's files are looked for, as for\n"
		"                      'ustack report' (its section \"Where files are found\")\n"
		"      --diff A B      differential graph: A before, B after (each a trace or a\n"
		"                      folded file, told apart by the trace's magic); frames\n"
		"                      sized by B, red where a frame's self samples grew, blue\n"
		"                      where they shrank; tooltips show both counts and the change\n"
		"      --no-normalize  with --diff: compare raw sample counts (default: A's\n"
		"                      counts scaled to B's total, i.e. shares of each total)\n"
		"      --event NAME[,NAME]  a trace's events to draw (as 'ustack report --event')\n"
		"      --wall          a trace's wall-clock view: per thread (NAME-TID, the\n"
		"                      root frames), its time on CPU and off (report --wall)\n"
		"      --view VIEW, --at TIME  a trace's allocations: alloc_space, alloc_objects,\n"
		"                      inuse_space (default), inuse_objects, live at TIME\n"
		"                      (as 'ustack report --view', '--at')\n"
		"      --countname NAME  folded input: what its numbers count (flamegraph.pl's\n"
		"                      option); 'ns' shows them as times (default: samples)\n"
		"\n"
		"Tooltips show the source lines (file.c:LINE) sampled in each frame: from a\n"
		"trace when DWARF is found, from folded input whose frames are written\n"
		"'func file.c:LINE' (report --srcline, perf's srcline). Frames ending in\n"
		"'_[i]' (report --annotate) are inlined. Widths in time (off-CPU events,\n"
		"--wall) show as times: 'kfunc_b (3.500 ms, 87.50%%)'.\n");
}

#define MAX_EVENT_OPTS 8

struct trace_args {
	int inline_frames, no_lines, wall, python_only;
	const char *view, *at; /* --view, --at: for the report */
	const char *events[MAX_EVENT_OPTS]; /* --event values, for the report */
	int nevents;
	const char *debug_dir;
	struct report_lookup lk; /* --symfs, --buildid-dir, --no-buildid-cache */
};

/* 1: @path starts with the trace file magic; 0: not (a folded file) */
static int looks_like_trace(const char *path)
{
	char magic[sizeof(TRACE_MAGIC) - 1];
	FILE *f;
	int ret;

	if (!strcmp(path, "-") || !(f = fopen(path, "re")))
		return 0; /* the folded reader says why it cannot open it */
	ret = fread(magic, 1, sizeof(magic), f) == sizeof(magic) &&
	      !memcmp(magic, TRACE_MAGIC, sizeof(magic));
	fclose(f);
	return ret;
}

/*
 * Add one input to the tree (the drawn counts, or a diff's A with
 * @before). Returns 0, or the exit status after saying what went wrong.
 */
static int load_input(const char *path, int trace, const struct trace_args *ta,
		      struct node *root, int before, unsigned long *bad, unsigned long *deep,
		      uint32_t *unit, const char **view)
{
	char tmp[] = "/tmp/ustack-folded-XXXXXX";
	FILE *in;
	int ret;

	if (!trace) {
		in = strcmp(path, "-") ? fopen(path, "re") : stdin;
		if (!in) {
			cli_error("%s: %s", path, strerror(errno));
			return 1;
		}
	} else {
		/*
		 * The trace's folded stacks, exactly as the report counts them.
		 * Source lines travel in the folded text itself ("func
		 * file.c:12", --srcline) and inlined frames carry "_[i]"
		 * (--annotate): split_frame() takes both off again, so boxes
		 * are per function as without lines, and --folded input
		 * written that way (perf's srcline) gets the same tooltips.
		 */
		char *rargv[16 + 4 + 2 * MAX_EVENT_OPTS + 1 + 2 * REPORT_BUILDID_DIRS_MAX + 3];
		struct report_result res = { 0 };
		int rargc = 0, tmpfd;

		rargv[rargc++] = "report";
		rargv[rargc++] = "-i";
		rargv[rargc++] = (char *)path;
		rargv[rargc++] = "--format";
		rargv[rargc++] = "folded";
		rargv[rargc++] = "-o";
		rargv[rargc++] = tmp;
		if (!ta->no_lines) {
			rargv[rargc++] = "--srcline";
			rargv[rargc++] = "--annotate";
		}
		if (ta->inline_frames)
			rargv[rargc++] = "--inline";
		if (ta->python_only)
			rargv[rargc++] = "--python-only";
		for (int k = 0; k < ta->nevents; k++) {
			rargv[rargc++] = "--event";
			rargv[rargc++] = (char *)ta->events[k];
		}
		if (ta->wall)
			rargv[rargc++] = "--wall";
		if (ta->view) {
			rargv[rargc++] = "--view";
			rargv[rargc++] = (char *)ta->view;
		}
		if (ta->at) {
			rargv[rargc++] = "--at";
			rargv[rargc++] = (char *)ta->at;
		}
		if (ta->debug_dir) {
			rargv[rargc++] = "--debug-dir";
			rargv[rargc++] = (char *)ta->debug_dir;
		}
		rargc = report_lookup__argv(&ta->lk, rargv, rargc);
		rargv[rargc] = NULL;

		tmpfd = mkstemp(tmp);
		if (tmpfd < 0) {
			cli_error("flamegraph: temporary file: %s", strerror(errno));
			return 1;
		}
		optind = 0;
		ret = report_run(rargc, rargv, &res);
		*unit = res.unit;
		if (res.view && view)
			*view = res.view;
		if (ret) {
			unlink(tmp);
			close(tmpfd);
			return ret; /* the report said what went wrong */
		}
		in = fdopen(tmpfd, "r");
		unlink(tmp);
		if (!in) {
			close(tmpfd);
			return 1;
		}
	}
	ret = read_folded(in, root, bad, deep, before);
	if (in != stdin)
		fclose(in);
	if (ret) {
		cli_error("flamegraph: %s: %s", path, strerror(-ret));
		return 1;
	}
	return 0;
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "folded", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "inline", no_argument, NULL, 'I' },
		{ "no-lines", no_argument, NULL, 'L' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "symfs", required_argument, NULL, 'S' },
		{ "buildid-dir", required_argument, NULL, 'B' },
		{ "no-buildid-cache", no_argument, NULL, 'C' },
		{ "diff", no_argument, NULL, 'd' },
		{ "no-normalize", no_argument, NULL, 'N' },
		{ "event", required_argument, NULL, 'e' },
		{ "wall", no_argument, NULL, 'W' },
		{ "python-only", no_argument, NULL, 'P' },
		{ "view", required_argument, NULL, 'V' },
		{ "at", required_argument, NULL, 'A' },
		{ "countname", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = NULL, *folded = NULL, *output = "ustack.svg", *title = NULL;
	const char *path_a = NULL, *path_b = NULL;
	struct trace_args ta = { 0 };
	const char *countname = NULL;
	struct wunit wu = { .unit = USTACK_TRACE_EV_UNIT_COUNT };
	uint32_t unit_a = USTACK_TRACE_EV_UNIT_COUNT, unit_b = USTACK_TRACE_EV_UNIT_COUNT;
	int diff_mode = 0, no_normalize = 0, trace_a = 0, trace_b;
	char titlebuf[512];
	const char *view_b = NULL;
	struct node root = { .name = "all" };
	struct diff diff = { .fa = 1.0 };
	unsigned long bad = 0, deep = 0;
	FILE *out;
	int c, ret;

	while ((c = getopt_long(argc, argv, "i:f:o:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'f': folded = optarg; break;
		case 'o': output = optarg; break;
		case 't': title = optarg; break;
		case 'I': ta.inline_frames = 1; break;
		case 'P': ta.python_only = 1; break;
		case 'L': ta.no_lines = 1; break;
		case 'D': ta.debug_dir = optarg; break;
		case 'S': ta.lk.symfs = optarg; break;
		case 'C': ta.lk.no_buildid_cache = 1; break;
		case 'B':
			if (ta.lk.ngiven == REPORT_BUILDID_DIRS_MAX) {
				cli_error("flamegraph: at most %d --buildid-dir", REPORT_BUILDID_DIRS_MAX);
				return 2;
			}
			ta.lk.given[ta.lk.ngiven++] = optarg;
			break;
		case 'd': diff_mode = 1; break;
		case 'N': no_normalize = 1; break;
		case 'W': ta.wall = 1; break;
		case 'V': ta.view = optarg; break;
		case 'A': ta.at = optarg; break;
		case 'c': countname = optarg; break;
		case 'e':
			if (ta.nevents == MAX_EVENT_OPTS) {
				cli_error("flamegraph: at most %d --event (each takes NAME[,NAME])",
					  MAX_EVENT_OPTS);
				return 2;
			}
			ta.events[ta.nevents++] = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (diff_mode) {
		if (input || folded || optind + 2 != argc) {
			cli_error("flamegraph: --diff takes two inputs, A (before) and B (after), "
				  "and no -i/--folded");
			return 2;
		}
		path_a = argv[optind];
		path_b = argv[optind + 1];
		if (!strcmp(path_a, "-") && !strcmp(path_b, "-")) {
			cli_error("flamegraph: --diff: only one input can be stdin");
			return 2;
		}
		trace_a = looks_like_trace(path_a);
		trace_b = looks_like_trace(path_b);
	} else {
		/* one input: -i TRACE, --folded FILE, or FILE alone (a trace or
		 * folded stacks, told apart by the trace's magic) */
		if (optind + 1 < argc || (input && folded) || (optind < argc && (input || folded))) {
			usage(stderr);
			return 2;
		}
		if (no_normalize) {
			cli_error("flamegraph: --no-normalize applies to --diff only");
			return 2;
		}
		if (optind < argc) {
			path_b = argv[optind];
			trace_b = looks_like_trace(path_b);
		} else {
			path_b = folded ? folded : input ? input : "ustack.data";
			trace_b = !folded;
		}
	}
	if (!trace_a && !trace_b && (ta.inline_frames || ta.no_lines || ta.debug_dir || ta.python_only ||
				     ta.lk.symfs || ta.lk.ngiven || ta.lk.no_buildid_cache)) {
		/* folded input is already symbolized: these would do nothing */
		cli_error("flamegraph: --inline, --no-lines, --python-only, --debug-dir, --symfs, "
			  "--buildid-dir and --no-buildid-cache apply to a trace, not to --folded input");
		return 2;
	}
	if (!trace_a && !trace_b && (ta.nevents || ta.wall || ta.view || ta.at)) {
		cli_error("flamegraph: --event and --wall choose a trace's events; folded input "
			  "has its numbers already");
		return 2;
	}
	if ((trace_a || trace_b) && countname) {
		/* a trace says its unit itself */
		cli_error("flamegraph: --countname names the numbers of folded input, not of a trace");
		return 2;
	}
	if (diff_mode && (ret = load_input(path_a, trace_a, &ta, &root, 1, &bad, &deep, &unit_a, NULL)))
		goto out_free;
	if ((ret = load_input(path_b, trace_b, &ta, &root, 0, &bad, &deep, &unit_b, &view_b)))
		goto out_free;
	ret = 1;
	/* an A without stacks (no unit seen) is said below */
	if (diff_mode && root.count_a && root.count && unit_a != unit_b) {
		cli_error("flamegraph: --diff: %s counts %s, %s %s: widths of unlike units "
			  "cannot be compared", path_a, report_unit_name(unit_a), path_b,
			  report_unit_name(unit_b));
		goto out_free;
	}
	wu.unit = unit_b;
	if (countname && !strcmp(countname, "ns"))
		wu.unit = USTACK_TRACE_EV_UNIT_NS;
	else if (countname && strcmp(countname, "samples"))
		wu.name = countname;
	if (!root.count) {
		if (diff_mode)
			cli_error("flamegraph: %s: no stacks in B", path_b);
		else
			cli_error("flamegraph: no stacks in the input");
		goto out_free;
	}
	if (diff_mode && !root.count_a) {
		cli_error("flamegraph: %s: no stacks in A", path_a);
		goto out_free;
	}
	if (bad)
		fprintf(stderr, "ustack: flamegraph: %lu malformed folded lines skipped\n", bad);
	if (deep)
		fprintf(stderr, "ustack: flamegraph: %lu stacks deeper than %d frames: "
			"their innermost frames dropped\n", deep, MAX_STACK_DEPTH);
	if (diff_mode) {
		diff.normalize = !no_normalize;
		if (diff.normalize)
			diff.fa = (double)root.count / (double)root.count_a;
		diff_max(&root, &diff);
		if (title)
			snprintf(titlebuf, sizeof(titlebuf), "%s", title);
		else
			snprintf(titlebuf, sizeof(titlebuf), "%s -> %s", path_a, path_b);
	} else {
		/* an allocation trace says which of its four views is drawn */
		if (!title && view_b)
			snprintf(titlebuf, sizeof(titlebuf), "%s (%s)", path_b, view_b);
		else
			snprintf(titlebuf, sizeof(titlebuf), "%s", title ? title : path_b);
	}
	out = strcmp(output, "-") ? fopen(output, "we") : stdout;
	if (!out) {
		cli_error("%s: %s", output, strerror(errno));
		goto out_free;
	}
	cli_output_buffer(out);
	ret = render(out, &root, titlebuf, diff_mode ? &diff : NULL, &wu);
	/* standard output too: its last 64 KiB are written here, not at exit */
	if ((out != stdout ? fclose(out) : fflush(out)) || ret) {
		cli_error("%s: write failed", output);
		ret = 1;
		goto out_free;
	}
	if (out != stdout) {
		fprintf(stderr, "ustack: wrote %s (", output);
		if (diff_mode) {
			put_weight(stderr, &wu, root.count_a, 0);
			fputs(" before, ", stderr);
		}
		if (diff_mode && wu.unit == USTACK_TRACE_EV_UNIT_COUNT && !wu.name)
			fprintf(stderr, "%llu", (unsigned long long)root.count); /* "N samples before, M after" */
		else
			put_weight(stderr, &wu, root.count, 0);
		/* "(N bytes)" alone would read as the file's size */
		if (wu.unit == USTACK_TRACE_EV_UNIT_BYTES && !wu.name)
			fputs(" allocated", stderr);
		fputs(diff_mode ? " after)\n" : ")\n", stderr);
	}
	ret = 0;
out_free:
	node_free(root.child);
	return ret;
}
