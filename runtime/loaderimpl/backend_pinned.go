//go:build cuda

package loaderimpl

import (
	"errors"
	"fmt"
	goruntime "runtime"

	"gorgonia.org/cu"
)

// pinnedCPUBackend is the CPU backend of a cuda build whose staging goes
// to another runtime (hostmem.Outside: the Python bridge): its slots are
// pinned host memory, allocated in the primary context of device dev, so
// that a consumer's own copy to the GPU (torch's .cuda(non_blocking=True))
// is an asynchronous DMA copy. Only the consumer calls slot, and close
// runs after the last batch is released.
type pinnedCPUBackend struct {
	cpuBackend
	dev   cu.Device
	slots [][]byte // what slot allocated, for close
}

// newPinnedCPUBackend retains dev's primary context for the slots.
func newPinnedCPUBackend(dev cu.Device) (*pinnedCPUBackend, error) {
	if _, err := dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("pinned staging: retain the primary context of device %d: %w", int(dev), err)
	}
	return &pinnedCPUBackend{dev: dev}, nil
}

// inContext runs f on this goroutine's OS thread with the primary context
// current, as the driver's host allocations need one.
func (p *pinnedCPUBackend) inContext(f func() error) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	ctx, err := p.dev.RetainPrimaryCtx()
	if err != nil {
		return err
	}
	defer p.dev.ReleasePrimaryCtx()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return err
	}
	defer cu.SetCurrentContext(cu.CUContext{})
	return f()
}

func (p *pinnedCPUBackend) slot(_ int, n int64) ([]byte, error) {
	var b []byte
	err := p.inContext(func() error {
		var err error
		b, err = pinnedAlloc(n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pinned staging: %w", err)
	}
	p.slots = append(p.slots, b)
	return b, nil
}

func (p *pinnedCPUBackend) close() error {
	err := p.inContext(func() error {
		var errs []error
		for _, b := range p.slots {
			errs = append(errs, pinnedFree(b))
		}
		return errors.Join(errs...)
	})
	p.slots = nil
	return errors.Join(err, p.dev.ReleasePrimaryCtx())
}
