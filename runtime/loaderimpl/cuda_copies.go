//go:build cuda

package loaderimpl

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/runtime"
)

// issueOrder is the order in which a batch's copies are issued: by
// priority, high first, then in plan order. Stream priorities do not apply
// to copies (cuda.h: "Stream priorities have no effect on host-to-device and
// device-to-host memory operations"), so issue order is what lets a
// high-priority key, say the inputs, arrive before the rest.
func issueOrder(keys []runtime.Key) []int {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(priorityOrder(keys[a].Priority), priorityOrder(keys[b].Priority))
	})
	return order
}

// streamKeys names the keys copied on stream st, for errors: `key "b"`,
// `keys "a", "c"`.
func (c *cudaBackend) streamKeys(st int) string {
	var names []string
	for _, k := range c.order {
		if c.plan.Keys[k].Stream == st {
			names = append(names, strconv.Quote(c.plan.Keys[k].Name))
		}
	}
	if len(names) == 1 {
		return "key " + names[0]
	}
	return "keys " + strings.Join(names, ", ")
}

// launchOrder is the order of the streams' launches: by the issue order of
// their first key, then any stream without keys.
func launchOrder(p runtime.Plan, order []int) []int {
	var streams []int
	for _, k := range order {
		if st := p.Keys[k].Stream; !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	for st := range p.NumStreams {
		if !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	return streams
}

// priorityOrder ranks the priorities, high first: the order of a batch's copies
// and of the streams' priority levels.
func priorityOrder(p runtime.Priority) int {
	switch p {
	case runtime.High:
		return 0
	case runtime.Normal:
		return 1
	}
	return 2
}

// makeGraphs builds slot s's graphs, one per stream: the start record,
// each of the stream's keys' copy of a full batch and key record in issue
// order, and the ready record, as issue queues them call by call. An error
// wrapping errNoGraphs says the driver has no graphs.
func (c *cudaBackend) makeGraphs(s int) error {
	sl := &c.slots[s]
	for i := range c.streams {
		steps := []graphStep{{event: sl.start[i]}}
		for _, k := range c.order {
			if key := c.plan.Keys[k]; key.Stream == i {
				steps = append(steps, graphStep{dst: sl.device + cu.DevicePtr(key.Offset), src: unsafe.Pointer(&sl.host[key.Offset]), n: key.BatchBytes},
					graphStep{event: sl.key[k]})
			}
		}
		g, err := newGraph(append(steps, graphStep{event: sl.ready[i]}))
		if err != nil {
			return fmt.Errorf("staging slot %d, stream %d: %w", s, i, err)
		}
		sl.graphs = append(sl.graphs, g)
	}
	return nil
}

// destroyGraphs frees every slot's graphs.
func (c *cudaBackend) destroyGraphs() error {
	var errs []error
	for s := range c.slots {
		for _, g := range c.slots[s].graphs {
			errs = append(errs, g.destroy())
		}
		c.slots[s].graphs = nil
	}
	return errors.Join(errs...)
}

// makeStreams creates the planned streams. A stream runs at the highest
// priority of its keys: high is the device's greatest priority, low its
// least, and normal the middle of the range. It orders the consumer's work
// queued there; copies are ordered by issueOrder.
func (c *cudaBackend) makeStreams() error {
	least, greatest, err := cu.StreamPriorityRange()
	if err != nil {
		return fmt.Errorf("stream priority range: %w", err)
	}
	// By Priority.order: high, normal, low.
	value := [...]int{greatest, least + (greatest-least)/2, least}
	level := make([]int, c.plan.NumStreams)
	for i := range level {
		level[i] = priorityOrder(runtime.Low)
	}
	for _, k := range c.plan.Keys {
		level[k.Stream] = min(level[k.Stream], priorityOrder(k.Priority))
	}
	for i := range c.plan.NumStreams {
		st, err := cu.MakeStreamWithPriority(value[level[i]], cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("create stream %d: %w", i, err)
		}
		c.streams = append(c.streams, st)
	}
	return nil
}

// issue queues the copies of slot s's n samples: after the consumer's Done
// events, a start event per stream, each key's copy on its stream in issue
// order followed by its key event, and a ready event per stream. A copy
// that fails to queue stops the rest, but the ready events are still
// recorded, so that reuse waits for the copies already queued.
func (c *cudaBackend) issue(s, n, batch int) error {
	sl := &c.slots[s]
	if sl.state != idle {
		return fmt.Errorf("cuda backend: slot %d filled while its copies are outstanding", s)
	}
	sl.batch = batch
	clear(sl.untimed)
	c.calls = 0
	for _, st := range c.streams {
		for _, done := range sl.done[:sl.nDone] {
			c.calls++
			if err := st.Wait(done, 0); err != nil {
				return fmt.Errorf("wait for the consumer: %w", err)
			}
		}
	}
	sl.nDone = 0
	if sl.graphs != nil && n == c.plan.BatchSize {
		return c.launch(sl)
	}
	for i, st := range c.streams {
		if err := sl.start[i].Record(st); err != nil {
			return fmt.Errorf("record start event: %w", err)
		}
	}
	c.calls += len(c.streams)
	sl.state = copying
	var copyErr error
	for _, k := range c.order {
		key, st := c.plan.Keys[k], c.streams[c.plan.Keys[k].Stream]
		src := unsafe.Pointer(&sl.host[key.Offset])
		c.calls += 2
		if err := cu.MemcpyHtoDAsync(sl.device+cu.DevicePtr(key.Offset), src, int64(n)*key.SampleBytes, st); err != nil {
			copyErr = fmt.Errorf("copy key %q: %w", key.Name, err)
			break
		}
		if err := sl.key[k].Record(st); err != nil {
			copyErr = fmt.Errorf("record key event: %w", err)
			break
		}
	}
	return errors.Join(copyErr, c.recordReady(sl, c.launches))
}

// recordReady records slot sl's ready event on each of the streams, after
// the copies queued there. Without a ready event nothing says when the
// queued copies end: then it waits for them here, and leaves their time
// uncounted.
func (c *cudaBackend) recordReady(sl *cudaSlot, streams []int) error {
	for _, i := range streams {
		c.calls++
		if err := sl.ready[i].Record(c.streams[i]); err != nil {
			sl.state = idle
			return errors.Join(fmt.Errorf("record ready event: %w", err), c.syncStreams())
		}
	}
	return nil
}

// launch queues a full batch of slot sl as one graph launch per stream.
// When a launch fails, the streams from it on get their ready events call
// by call, so that reuse still waits for whatever was queued, and the batch
// fails.
//
// The copy times of those streams are not measured (untimed): their start
// events are recorded only inside their graphs, so a start event may be a
// previous batch's or one never recorded (Elapsed then fails), and the
// failed launch itself may have queued part of its graph or nothing (a
// driver submits a graph whole; the emulator queues the nodes before the
// failing copy). Recording start events here, beside the ready events,
// would time none of the copies queued; untimed, their time is counted as
// lost (settle) rather than measured wrong.
func (c *cudaBackend) launch(sl *cudaSlot) error {
	sl.state = copying
	for j, i := range c.launches {
		c.calls++
		err := sl.graphs[i].launch(c.streams[i])
		if err == nil {
			continue
		}
		if sl.untimed == nil {
			sl.untimed = make([]bool, len(c.streams))
		}
		for _, st := range c.launches[j:] {
			sl.untimed[st] = true
		}
		return errors.Join(fmt.Errorf("copy %s (one graph launch on stream %d): %w", c.streamKeys(i), i, err), c.recordReady(sl, c.launches[j:]))
	}
	return nil
}
