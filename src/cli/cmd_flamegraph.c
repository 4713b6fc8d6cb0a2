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

struct node {
	char *name;
	uint64_t count;
	struct node *child, *next; /* children in first-seen order */
};

static struct node *node_new(const char *name, size_t len)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->name = strndup(name, len))) {
		free(n);
		return NULL;
	}
	return n;
}

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		node_free(n->child);
		free(n->name);
		free(n);
		n = next;
	}
}

/* Add "a;b;c" with @count below @root. */
static int tree_add(struct node *root, char *stack, uint64_t count)
{
	struct node *cur = root;

	root->count += count;
	for (char *tok = stack, *semi; tok && *tok; tok = semi ? semi + 1 : NULL) {
		struct node **pp = &cur->child;
		size_t len;

		semi = strchr(tok, ';');
		len = semi ? (size_t)(semi - tok) : strlen(tok);
		while (*pp && (strlen((*pp)->name) != len || memcmp((*pp)->name, tok, len)))
			pp = &(*pp)->next;
		if (!*pp && !(*pp = node_new(tok, len)))
			return -ENOMEM;
		cur = *pp;
		cur->count += count;
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

/* FlameGraph's warm palette, stable per name. */
static void color_of(const char *name, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	*r = 205 + (int)(h % 50);
	*g = (int)((h >> 8) % 230);
	*b = (int)((h >> 16) % 55);
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

static void emit_node(FILE *out, const struct node *n, double x, int depth, int height,
		      uint64_t total, double scale)
{
	double w = n->count * scale, cx = x;
	int r, g, b;
	double y = PAD_TOP + (double)(height - depth - 1) * ROW;

	if (w < MIN_WIDTH)
		return;
	if (depth > 0) { /* depth 0 is the synthetic "all" root, drawn too */
		color_of(n->name, &r, &g, &b);
	} else {
		r = 220, g = 220, b = 220;
	}
	fprintf(out, "<g class=\"f\"><title>");
	xml_escape(out, n->name);
	fprintf(out, " (%llu samples, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		     "height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		(unsigned long long)n->count, 100.0 * n->count / total, x, y, w, ROW - 1, r, g, b,
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
"    g.dataset.name=t.replace(/ \\([0-9]+ samples, [0-9.]+%\\)$/,'');\n"
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
		"      --debug-dir DIR root of separate debug files (default /usr/lib/debug)\n");
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "folded", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = NULL, *folded = NULL, *output = "ustack.svg", *title = NULL;
	const char *debug_dir = "/usr/lib/debug";
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
		case 'D': debug_dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (input && folded)) {
		usage(stderr);
		return 2;
	}
	if (folded) {
		in = strcmp(folded, "-") ? fopen(folded, "re") : stdin;
		if (!in) {
			cli_error("%s: %s", folded, strerror(errno));
			return 1;
		}
	} else {
		/* the trace's folded stacks, exactly as the report counts them */
		char *rargv[] = { "report", "-i", (char *)(input ? input : "ustack.data"), "--format",
				  "folded", "-o", tmp, "--debug-dir", (char *)debug_dir, NULL };

		tmpfd = mkstemp(tmp);
		if (tmpfd < 0) {
			cli_error("flamegraph: temporary file: %s", strerror(errno));
			return 1;
		}
		optind = 0;
		ret = cmd_report(9, rargv);
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
