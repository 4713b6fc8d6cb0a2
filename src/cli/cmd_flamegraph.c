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

#define WIDTH 1200.0
#define ROW 16
#define PAD_TOP 50
#define PAD_SIDE 10
#define MIN_WIDTH 0.1 /* px: narrower frames are not drawn */

/* one source line a frame was seen at, and its samples */
struct srcline {
	char *where; /* "file.c:12" */
	uint64_t count;
	struct srcline *next;
};

struct node {
	char *name;
	int inlined; /* the frame ended in FlameGraph's "_[i]" */
	uint64_t count;
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

/* Add "a;b;c" with @count below @root. */
static int tree_add(struct node *root, char *stack, uint64_t count)
{
	struct node *cur = root;

	root->count += count;
	for (char *tok = stack, *semi; tok && *tok; tok = semi ? semi + 1 : NULL) {
		struct node **pp = &cur->child;
		size_t len, nlen, wlen;
		const char *where;
		int inl;

		semi = strchr(tok, ';');
		len = semi ? (size_t)(semi - tok) : strlen(tok);
		split_frame(tok, len, &nlen, &where, &wlen, &inl);
		while (*pp && ((*pp)->inlined != inl || strlen((*pp)->name) != nlen ||
			       memcmp((*pp)->name, tok, nlen)))
			pp = &(*pp)->next;
		if (!*pp && !(*pp = node_new(tok, nlen, inl)))
			return -ENOMEM;
		cur = *pp;
		cur->count += count;
		if (where && node_add_line(cur, where, wlen, count))
			return -ENOMEM;
	}
	return 0;
}

/* Parse folded lines; malformed ones are counted, not fatal. */
static int read_folded(FILE *f, struct node *root, unsigned long *bad)
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
		ret = tree_add(root, line, count);
	}
	free(line);
	return ret;
}

static int tree_depth(const struct node *n)
{
	int d = 0;

	for (const struct node *c = n->child; c; c = c->next) {
		int cd = tree_depth(c);

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

static void xml_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

/* FlameGraph's warm palette, stable per name; inlined frames in its aqua
 * (as flamegraph.pl --colors java paints "_[i]" frames) */
static void color_of(const char *name, int inlined, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
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

/* the tooltip's source lines: the most sampled first, a few at most */
#define MAX_TIP_LINES 8

static void emit_lines(FILE *out, const struct node *n)
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
		if (total > 1)
			fprintf(out, " (%llu samples)", (unsigned long long)shown[i]->count);
	}
	if (total > nshown)
		fprintf(out, "\n(%zu more lines)", total - nshown);
}

static void emit_node(FILE *out, const struct node *n, double x, int depth, int height,
		      uint64_t total, double scale)
{
	double w = n->count * scale, cx = x;
	int r, g, b;
	double y = PAD_TOP + (double)(height - depth - 1) * ROW;

	if (w < MIN_WIDTH)
		return;
	if (depth > 0) { /* depth 0 is the synthetic "all" root, drawn too */
		color_of(n->name, n->inlined, &r, &g, &b);
	} else {
		r = 220, g = 220, b = 220;
	}
	/* the title's first line is "name (N samples, P%)" (the script takes
	 * the name from it); then "inlined" and the source lines */
	fprintf(out, "<g class=\"f\"><title>");
	xml_escape(out, n->name);
	fprintf(out, " (%llu samples, %.2f%%)", (unsigned long long)n->count,
		100.0 * n->count / total);
	if (n->inlined)
		fputs("\ninlined", out);
	emit_lines(out, n);
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		     "height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, ROW - 1, r, g, b,
		x + 3, y + ROW - 4.5);
	/* the script refits labels on zoom; start with what fits at 7px/char */
	if (w > 21) {
		size_t fit = (size_t)((w - 6) / 7), len = strlen(n->name);

		if (len <= fit) {
			xml_escape(out, n->name);
		} else if (fit > 2) {
			char *cut = strndup(n->name, fit - 2);

			if (cut) {
				xml_escape(out, cut);
				fputs("..", out);
				free(cut);
			}
		}
	}
	fputs("</text></g>\n", out);
	for (const struct node *c = n->child; c; c = c->next) {
		emit_node(out, c, cx, depth + 1, height, total, scale);
		cx += c->count * scale;
	}
}

static const char script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"var frames, W, X0;\n"
"function init(){ frames=[].slice.call(document.querySelectorAll('g.f'));\n"
"  frames.forEach(function(g){ var r=g.querySelector('rect'), t=g.querySelector('title').textContent;\n"
"    g.dataset.x=r.getAttribute('x'); g.dataset.w=r.getAttribute('width');\n"
"    g.dataset.name=t.split('\\n')[0].replace(/ \\([0-9]+ samples, [0-9.]+%\\)$/,'');\n"
"    g.onclick=function(){ zoom(g); }; });\n"
"  X0=parseFloat(frames[0].dataset.x); W=parseFloat(frames[0].dataset.w); }\n"
"function fit(g,x,w){ var r=g.querySelector('rect'), t=g.querySelector('text'), n=g.dataset.name, c=Math.floor((w-6)/7);\n"
"  r.setAttribute('x',x); r.setAttribute('width',Math.max(w,0)); t.setAttribute('x',x+3);\n"
"  t.textContent = w<21||c<3 ? '' : (n.length<=c ? n : n.substr(0,c-2)+'..'); g.style.display = w<0.1 ? 'none' : ''; }\n"
"function zoom(z){ var zx=parseFloat(z.dataset.x), zw=parseFloat(z.dataset.w), zy=parseFloat(z.querySelector('rect').getAttribute('y'));\n"
"  var s=W/zw; frames.forEach(function(g){ var x=parseFloat(g.dataset.x), w=parseFloat(g.dataset.w), y=parseFloat(g.querySelector('rect').getAttribute('y'));\n"
"    if (y>zy) { fit(g,X0,W); g.style.opacity=0.5; return; } g.style.opacity='';\n"
"    if (x+w<=zx+1e-6 || x>=zx+zw-1e-6) { fit(g,0,0); return; } fit(g,X0+(x-zx)*s,w*s); });\n"
"  document.getElementById('reset').style.opacity=1; }\n"
"function reset(){ frames.forEach(function(g){ g.style.opacity=''; fit(g,parseFloat(g.dataset.x),parseFloat(g.dataset.w)); });\n"
"  document.getElementById('reset').style.opacity=0.3; }\n"
"function search(){ var q=prompt('Search (regular expression)',''); if (q===null) return; var re; try { re=new RegExp(q); } catch(e) { return; }\n"
"  var hit=0, tot=parseFloat(frames[0].dataset.w); frames.forEach(function(g){ var m=q!=='' && re.test(g.dataset.name);\n"
"    g.querySelector('rect').style.fill = m ? 'rgb(230,0,230)' : ''; });\n"
"  document.getElementById('matched').textContent = q==='' ? '' : 'Matched: '+q; }\n"
"]]></script>\n";

static int render(FILE *out, const struct node *root, const char *title)
{
	int height = tree_depth(root);
	double scale = (WIDTH - 2 * PAD_SIDE) / (double)root->count;
	int svg_h = PAD_TOP + height * ROW + 30;

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" onload=\"init()\" "
		     "viewBox=\"0 0 %.0f %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		     "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
		     "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		     "#title { font-size: 17px; } .btn { cursor: pointer; }</style>\n",
		WIDTH, svg_h, WIDTH, svg_h);
	fputs(script, out);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		     "<text id=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">",
		WIDTH / 2);
	xml_escape(out, title);
	fprintf(out, "</text>\n<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"24\" style=\"opacity:0.3\" "
		     "onclick=\"reset()\">Reset zoom</text>\n"
		     "<text class=\"btn\" x=\"%.0f\" y=\"24\" text-anchor=\"end\" onclick=\"search()\">"
		     "Search</text>\n<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"></text>\n",
		PAD_SIDE, WIDTH - PAD_SIDE, WIDTH - PAD_SIDE, svg_h - 10);
	emit_node(out, root, PAD_SIDE, 0, height, root->count, scale);
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack flamegraph [-i TRACE | --folded FILE] [-o OUT.svg] [--title TEXT]\n"
		"                         [--inline] [--no-lines] [--debug-dir DIR]\n"
		"\n"
		"Write a self-contained, interactive SVG flame graph (click to zoom,\n"
		"search by regular expression) of a trace's stacks, as counted by\n"
		"'ustack report --format folded', or of a folded file ('-' for stdin),\n"
		"e.g. from 'ustack snapshot -p PID --format folded'.\n"
		"\n"
		"  -i, --input TRACE   trace file (default ustack.data)\n"
		"  -f, --folded FILE   folded stacks instead of a trace\n"
		"  -o, --output FILE   SVG file (default ustack.svg; '-' for stdout)\n"
		"  -t, --title TEXT    title (default: the input's name)\n"
		"      --inline        inlined functions as frames of their own (tooltip: inlined)\n"
		"      --no-lines      no source lines in the tooltips (no DWARF read; faster)\n"
		"      --debug-dir DIR separate debug files (default /usr/lib/debug)\n"
		"\n"
		"Tooltips show the source lines (file.c:LINE) sampled in each frame: from a\n"
		"trace when DWARF is found, from folded input whose frames are written\n"
		"'func file.c:LINE' (report --srcline, perf's srcline). Frames ending in\n"
		"'_[i]' (report --annotate) are inlined.\n");
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = NULL, *folded = NULL, *output = "ustack.svg", *title = NULL;
	const char *debug_dir = NULL;
	int inline_frames = 0, no_lines = 0;
	char tmp[] = "/tmp/ustack-folded-XXXXXX", titlebuf[512];
	struct node root = { .name = "all" };
	unsigned long bad = 0;
	FILE *in = NULL, *out;
	int c, ret, tmpfd = -1;

	while ((c = getopt_long(argc, argv, "i:f:o:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'f': folded = optarg; break;
		case 'o': output = optarg; break;
		case 't': title = optarg; break;
		case 'I': inline_frames = 1; break;
		case 'L': no_lines = 1; break;
		case 'D': debug_dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (input && folded)) {
		usage(stderr);
		return 2;
	}
	if (folded && (inline_frames || no_lines || debug_dir)) {
		/* folded input is already symbolized: these would do nothing */
		cli_error("flamegraph: --inline, --no-lines and --debug-dir apply to a trace, "
			  "not to --folded input");
		return 2;
	}
	if (folded) {
		in = strcmp(folded, "-") ? fopen(folded, "re") : stdin;
		if (!in) {
			cli_error("%s: %s", folded, strerror(errno));
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
		char *rargv[16];
		int rargc = 0;

		rargv[rargc++] = "report";
		rargv[rargc++] = "-i";
		rargv[rargc++] = (char *)(input ? input : "ustack.data");
		rargv[rargc++] = "--format";
		rargv[rargc++] = "folded";
		rargv[rargc++] = "-o";
		rargv[rargc++] = tmp;
		if (!no_lines) {
			rargv[rargc++] = "--srcline";
			rargv[rargc++] = "--annotate";
		}
		if (inline_frames)
			rargv[rargc++] = "--inline";
		if (debug_dir) {
			rargv[rargc++] = "--debug-dir";
			rargv[rargc++] = (char *)debug_dir;
		}
		rargv[rargc] = NULL;

		tmpfd = mkstemp(tmp);
		if (tmpfd < 0) {
			cli_error("flamegraph: temporary file: %s", strerror(errno));
			return 1;
		}
		optind = 0;
		ret = cmd_report(rargc, rargv);
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
	ret = read_folded(in, &root, &bad);
	if (in != stdin)
		fclose(in);
	if (ret || !root.count) {
		cli_error("flamegraph: %s", ret ? strerror(-ret) : "no stacks in the input");
		node_free(root.child);
		return 1;
	}
	if (bad)
		fprintf(stderr, "ustack: flamegraph: %lu malformed folded lines skipped\n", bad);
	snprintf(titlebuf, sizeof(titlebuf), "%s", title ? title
		 : folded ? folded : (input ? input : "ustack.data"));
	out = strcmp(output, "-") ? fopen(output, "we") : stdout;
	if (!out) {
		cli_error("%s: %s", output, strerror(errno));
		node_free(root.child);
		return 1;
	}
	ret = render(out, &root, titlebuf);
	if ((out != stdout && fclose(out)) || ret) {
		cli_error("%s: write failed", output);
		node_free(root.child);
		return 1;
	}
	if (out != stdout)
		fprintf(stderr, "ustack: wrote %s (%llu samples)\n", output,
			(unsigned long long)root.count);
	node_free(root.child);
	return 0;
}
