/*
 * CUDA graphs, as far as a chain of host-to-device copies and event
 * records: cuGraphCreate, cuGraphAddMemcpyNode, cuGraphAddEventRecordNode,
 * cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy and
 * cuGraphDestroy. A graph is a chain (each node depends on the one added
 * before it); a launch queues on its stream the ops that the same sequence
 * of cuMemcpyHtoDAsync and cuEventRecord calls would, through the same
 * code, so stream order, copy-engine timing, race detection and
 * CUDAEMU_FAIL_COPY all apply. Anything else is CUDA_ERROR_NOT_SUPPORTED
 * with a note on stderr. Graphs belong to no context: only cuGraphLaunch
 * needs a current one.
 */
#include "emu.h"

#include <stdlib.h>

/* What a node does, as added; an executable graph holds copies of these. */
struct step {
	bool copy;          /* a host-to-device copy, else an event record */
	CUdeviceptr dst;    /* copy: dstDevice + dstXInBytes */
	const void *src;    /* copy: srcHost + srcXInBytes */
	size_t bytes;       /* copy: WidthInBytes */
	bool pinned;        /* copy: src lay in pinned memory when added */
	CUevent event;      /* record: the event's handle (handles are never reused) */
};

/* A node of a graph; its handle lives until the graph is destroyed. Guarded by g.mu. */
struct gnode {
	uintptr_t handle;
	struct graph *graph;
	struct step step;
};

/* A graph: a chain of nodes, in the order added. Guarded by g.mu. */
struct graph {
	uintptr_t handle;
	struct ctx *ctx;      /* the context of its nodes; NULL while it has none */
	struct gnode **nodes;
	size_t n, cap;
};

/*
 * An executable graph: a snapshot of a graph's steps. Guarded by g.mu.
 * refs counts the handle and the launches in progress or waiting (a
 * launch may release g.mu while it stages pageable memory).
 */
struct gexec {
	uintptr_t handle;
	int refs;
	bool launching;    /* a launch is queueing its steps */
	struct ctx *ctx;
	struct step *steps;
	size_t n;
	struct mark *done; /* the end of its last launch, NULL before the first */
	int stream_id;     /* the stream of its last launch */
};

static const char LAUNCH_COPY[] = "copy (graph node of cuGraphLaunch)";
static const char LAUNCH_RECORD[] = "event record (graph node of cuGraphLaunch)";

static CUresult graph_lookup(CUgraph h, struct graph **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	*out = handle_get(h, HK_GRAPH);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult exec_lookup(CUgraphExec h, struct gexec **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	*out = handle_get(h, HK_GEXEC);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static void exec_put(struct gexec *x)
{
	if (--x->refs == 0) {
		mark_put(x->done);
		free(x->steps);
		free(x);
	}
}

/* ---- building graphs ---- */

EMU_API CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	emu_lock();
	CUresult r = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS && (!phGraph || flags != 0)) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		struct graph *gr = xcalloc(1, sizeof *gr);
		gr->handle = handle_new(HK_GRAPH, gr);
		*phGraph = (CUgraph)gr->handle;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	emu_lock();
	struct graph *gr;
	CUresult r = graph_lookup(hGraph, &gr);
	if (r == CUDA_SUCCESS) {
		for (size_t i = 0; i < gr->n; i++) {
			handle_drop(gr->nodes[i]->handle);
			free(gr->nodes[i]);
		}
		handle_drop(gr->handle);
		free(gr->nodes);
		free(gr);
	}
	emu_unlock();
	return r;
}

/*
 * The checks every node add shares: the out-pointer, the graph, and the
 * dependencies, which must make the graph a chain: none for its first
 * node, exactly its last node for every other.
 */
static CUresult add_check(CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
			  const char *call, struct graph **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (!phNode || (ndeps > 0 && !deps)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct graph *gr;
	CUresult r = graph_lookup(hGraph, &gr);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	for (size_t i = 0; i < ndeps; i++) {
		struct gnode *d = handle_get(deps[i], HK_GNODE);
		if (!d || d->graph != gr) {
			return CUDA_ERROR_INVALID_VALUE; /* not a node of this graph */
		}
		for (size_t j = 0; j < i; j++) {
			if (deps[j] == deps[i]) {
				return CUDA_ERROR_INVALID_VALUE; /* duplicates are refused */
			}
		}
	}
	struct gnode *last = gr->n ? gr->nodes[gr->n - 1] : NULL;
	if (ndeps > 1 || (ndeps == 0 && last) || (ndeps == 1 && handle_get(deps[0], HK_GNODE) != last)) {
		emu_note("%s: only chains are modelled: each node after the first must depend on exactly "
			 "the graph's last node (%zu dependencies given, the graph has %zu nodes)",
			 call, ndeps, gr->n);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*out = gr;
	return CUDA_SUCCESS;
}

/* The nodes of a graph share one context: a launch queues them all on one stream. */
static CUresult same_ctx(struct graph *gr, struct ctx *c, const char *call)
{
	if (gr->ctx && gr->ctx != c) {
		emu_note("%s: a graph with nodes of two contexts is not modelled", call);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

static void add_node(struct graph *gr, struct ctx *c, const struct step *st, CUgraphNode *phNode)
{
	if (gr->n == gr->cap) {
		gr->cap = gr->cap ? 2 * gr->cap : 8;
		gr->nodes = xrealloc(gr->nodes, gr->cap, sizeof *gr->nodes);
	}
	struct gnode *nd = xcalloc(1, sizeof *nd);
	nd->graph = gr;
	nd->step = *st;
	nd->handle = handle_new(HK_GNODE, nd);
	gr->nodes[gr->n++] = nd;
	gr->ctx = c;
	*phNode = (CUgraphNode)nd->handle;
}

static bool memtype_valid(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY ||
	       t == CU_MEMORYTYPE_UNIFIED;
}

/*
 * The copy a CUDA_MEMCPY3D describes, if it is a modelled one: host to
 * device, one row of WidthInBytes bytes (Height and Depth 1, Y, Z and LOD
 * 0), from srcHost + srcXInBytes to dstDevice + dstXInBytes. Pitches,
 * heights and the fields of the other memory types are ignored, as for a
 * single row they do not matter.
 */
static CUresult copy_step(const CUDA_MEMCPY3D *p, struct step *st)
{
	if (!p || p->reserved0 || p->reserved1 || !memtype_valid(p->srcMemoryType) ||
	    !memtype_valid(p->dstMemoryType)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (p->srcMemoryType != CU_MEMORYTYPE_HOST || p->dstMemoryType != CU_MEMORYTYPE_DEVICE) {
		emu_note("cuGraphAddMemcpyNode: only host-to-device copies (CU_MEMORYTYPE_HOST to "
			 "CU_MEMORYTYPE_DEVICE) are modelled");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (p->Height != 1 || p->Depth != 1 || p->srcY || p->srcZ || p->dstY || p->dstZ || p->srcLOD ||
	    p->dstLOD) {
		emu_note("cuGraphAddMemcpyNode: only 1-D copies are modelled (Height = Depth = 1; Y, Z and LOD 0)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!p->srcHost || p->srcXInBytes > UINTPTR_MAX - (uintptr_t)p->srcHost ||
	    p->dstXInBytes > UINT64_MAX - p->dstDevice) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*st = (struct step){.copy = true,
			    .dst = p->dstDevice + p->dstXInBytes,
			    .src = (const char *)p->srcHost + p->srcXInBytes,
			    .bytes = p->WidthInBytes};
	return CUDA_SUCCESS;
}

/*
 * Checks the copy's arguments as cuMemcpyHtoDAsync does (device range in
 * one allocation of ctx). Notes whether the source is pinned now: a launch
 * refuses the node if that memory was freed since.
 */
static CUresult add_memcpy(CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
			   const CUDA_MEMCPY3D *params, CUcontext hctx)
{
	struct graph *gr;
	CUresult r = add_check(phNode, hGraph, deps, ndeps, "cuGraphAddMemcpyNode", &gr);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	struct ctx *c = hctx ? handle_get(hctx, HK_CTX) : NULL;
	if (!c) {
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (c->refs == 0) {
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
	struct step st;
	r = copy_step(params, &st);
	if (r == CUDA_SUCCESS) {
		r = htod_check(c, st.dst, st.src, st.bytes);
	}
	if (r == CUDA_SUCCESS) {
		r = same_ctx(gr, c, "cuGraphAddMemcpyNode");
	}
	if (r == CUDA_SUCCESS) {
		st.pinned = host_pinned(st.src, st.bytes);
		add_node(gr, c, &st, phNode);
	}
	return r;
}

EMU_API CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					      const CUgraphNode *dependencies, size_t numDependencies,
					      const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	emu_lock();
	CUresult r = add_memcpy(phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx);
	emu_unlock();
	return r;
}

static CUresult add_record(CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
			   CUevent hEvent)
{
	struct graph *gr;
	struct event *e;
	CUresult r = add_check(phNode, hGraph, deps, ndeps, "cuGraphAddEventRecordNode", &gr);
	if (r == CUDA_SUCCESS) {
		r = event_lookup(hEvent, &e);
	}
	if (r == CUDA_SUCCESS) {
		r = same_ctx(gr, e->ctx, "cuGraphAddEventRecordNode");
	}
	if (r == CUDA_SUCCESS) {
		struct step st = {.event = hEvent};
		add_node(gr, e->ctx, &st, phNode);
	}
	return r;
}

EMU_API CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						   const CUgraphNode *dependencies, size_t numDependencies,
						   CUevent event)
{
	emu_lock();
	CUresult r = add_record(phGraphNode, hGraph, dependencies, numDependencies, event);
	emu_unlock();
	return r;
}

/* ---- executable graphs ---- */

static CUresult instantiate(CUgraphExec *phExec, CUgraph hGraph, unsigned long long flags)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (!phExec) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct graph *gr;
	CUresult r = graph_lookup(hGraph, &gr);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
				   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
	if (flags & ~known) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (flags) {
		emu_note("cuGraphInstantiateWithFlags: flags 0x%llx are not modelled; pass 0", flags);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	struct gexec *x = xcalloc(1, sizeof *x);
	x->refs = 1;
	x->ctx = gr->ctx;
	x->n = gr->n;
	x->steps = xcalloc(gr->n, sizeof *x->steps);
	for (size_t i = 0; i < gr->n; i++) {
		x->steps[i] = gr->nodes[i]->step;
	}
	x->handle = handle_new(HK_GEXEC, x);
	*phExec = (CUgraphExec)x->handle;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
						     unsigned long long flags)
{
	emu_lock();
	CUresult r = instantiate(phGraphExec, hGraph, flags);
	emu_unlock();
	return r;
}

/* Launches still queued keep running: their ops own what they use. */
EMU_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	emu_lock();
	struct gexec *x;
	CUresult r = exec_lookup(hGraphExec, &x);
	if (r == CUDA_SUCCESS) {
		handle_drop(x->handle);
		exec_put(x);
	}
	emu_unlock();
	return r;
}

/*
 * Whether step st can be queued on a stream of c now, with the error the
 * equivalent call would return: an event record needs a live event of c
 * (cuEventRecord: CUDA_ERROR_INVALID_HANDLE); a copy needs its device range
 * still in one allocation of c (cuMemcpyHtoDAsync: CUDA_ERROR_INVALID_VALUE)
 * and, if its source was pinned when added, that memory still pinned.
 */
static CUresult step_check(const struct step *st, size_t i, const struct ctx *c, struct event **e)
{
	if (!st->copy) {
		CUresult r = event_lookup(st->event, e);
		if (r == CUDA_SUCCESS && (*e)->ctx != c) {
			r = CUDA_ERROR_INVALID_HANDLE;
		}
		return r;
	}
	CUresult r = htod_check(c, st->dst, st->src, st->bytes);
	if (r == CUDA_SUCCESS && st->pinned && !host_pinned(st->src, st->bytes)) {
		emu_note("cuGraphLaunch: node %zu copies from host memory 0x%lx (%zu bytes) that was pinned when "
			 "the node was added and has been freed since: CUDA_ERROR_INVALID_VALUE",
			 i + 1, (unsigned long)st->src, st->bytes);
		r = CUDA_ERROR_INVALID_VALUE;
	}
	return r;
}

/*
 * Queues the steps of x on stream hStream, in order, as the calls
 * cuMemcpyHtoDAsync and cuEventRecord would. Every step is checked first,
 * so a launch that would fail on a stale handle or freed memory queues
 * nothing. A copy counts as a cuMemcpyHtoDAsync call for
 * CUDAEMU_FAIL_COPY: the failing one ends the launch with
 * CUDA_ERROR_UNKNOWN, the steps before it queued, as a sequence of calls
 * stopping at the failing one would leave them. Each launch is ordered
 * after the previous launch of x, even on another stream (an implicit
 * wait, as cuda.h specifies). Called with x->launching set.
 */
static CUresult launch_steps(struct gexec *x, CUstream hStream)
{
	struct ctx *c;
	struct stream *s;
	struct event *e;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS) {
		r = stream_resolve(hStream, c, &s);
	}
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (x->ctx && x->ctx != c) {
		emu_note("cuGraphLaunch: launching a graph into a stream of another context than its nodes' "
			 "is not modelled");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	for (size_t i = 0; i < x->n; i++) {
		r = step_check(&x->steps[i], i, c, &e);
		if (r != CUDA_SUCCESS) {
			return r;
		}
	}
	if (x->done && !atomic_load(&x->done->done) && x->stream_id != s->id) {
		x->done->refs++;
		push_wait(s, x->done, "implicit wait for the previous cuGraphLaunch");
	}
	struct mark *end = NULL; /* the last step's record mark, if that was a record */
	size_t queued = 0;
	for (size_t i = 0; i < x->n; i++) {
		const struct step *st = &x->steps[i];
		if (i > 0) { /* a pageable copy may have released g.mu: look everything up again */
			r = cur_ctx(&c);
			if (r == CUDA_SUCCESS) {
				r = stream_resolve(hStream, c, &s);
			}
			if (r != CUDA_SUCCESS) {
				s = NULL;
				break;
			}
		}
		if (st->copy && fail_copy_now("a memcpy node of cuGraphLaunch")) {
			r = CUDA_ERROR_UNKNOWN;
			break;
		}
		r = step_check(st, i, c, &e);
		if (r != CUDA_SUCCESS) {
			break;
		}
		end = NULL;
		if (st->copy) {
			htod_enqueue(s, st->dst, st->src, st->bytes, LAUNCH_COPY, "cuGraphLaunch");
		} else {
			end = event_push_record(e, s, LAUNCH_RECORD);
		}
		queued++;
	}
	if (queued > 0 && s) {
		mark_put(x->done);
		if (end) {
			end->refs++;
			x->done = end;
		} else {
			x->done = stream_tail(s);
		}
		x->stream_id = s->id;
	}
	return r;
}

/*
 * One launch of an executable graph at a time, as in a driver: a launch
 * that stages pageable memory releases g.mu, and another thread's launch
 * of the same graph waits for it to finish queueing.
 */
static CUresult graph_launch(CUgraphExec hExec, CUstream hStream)
{
	struct gexec *x;
	CUresult r = exec_lookup(hExec, &x);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	x->refs++; /* x outlives a concurrent destroy while we wait */
	while (x->launching) {
		pthread_cond_wait(&g.progress, &g.mu);
	}
	if (handle_get(hExec, HK_GEXEC) != x) {
		r = CUDA_ERROR_INVALID_HANDLE; /* destroyed meanwhile */
	} else if (x->n > 0) {
		x->launching = true;
		r = launch_steps(x, hStream);
		x->launching = false;
		pthread_cond_broadcast(&g.progress);
	} else {
		struct ctx *c;
		struct stream *s;
		r = cur_ctx(&c);
		if (r == CUDA_SUCCESS) {
			r = stream_resolve(hStream, c, &s);
		}
	}
	exec_put(x);
	return r;
}

EMU_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	emu_lock();
	CUresult r = graph_launch(hGraphExec, hStream);
	emu_unlock();
	return r;
}
