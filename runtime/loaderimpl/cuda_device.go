//go:build cuda

package loaderimpl

import "gorgonia.org/cu"

// The CUDA backend is its batches' staged.Device: runtime.Batch's device
// methods, which say what each does, come here with the batch's slot.

func (c *cudaBackend) Wait(slot int, s cu.Stream) error {
	return c.call(cudaReq{op: opWait, stream: s, slot: slot})
}

func (c *cudaBackend) WaitKey(slot int, s cu.Stream, key int) error {
	return c.call(cudaReq{op: opWaitKey, stream: s, key: key, slot: slot})
}

func (c *cudaBackend) Sync(slot int) error { return c.call(cudaReq{op: opSync, slot: slot}) }

func (c *cudaBackend) Done(slot int, s cu.Stream) error {
	return c.call(cudaReq{op: opDone, stream: s, slot: slot})
}

func (c *cudaBackend) DeviceToHost(slot, key int, dst []byte) error {
	return c.call(cudaReq{op: opToHost, key: key, dst: dst, slot: slot})
}

func (c *cudaBackend) Ordinal() int { return c.ordinal }
