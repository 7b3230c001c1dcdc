//go:build cuda

package pattern

import (
	"fmt"

	"github.com/loadergen/loadergen/runtime"
)

// OnDevice is the rule that tensor k of a batch has a device buffer that
// holds what the host staged: data gives the batch's staged elements of the
// key (a generated batch's <Key>Data method).
func OnDevice[B Staged, T runtime.Element](k int, data func(B) []T) Rule[B] {
	return func(b B, indices []int) error {
		st := b.Staged()
		if st.Tensors[k].Device == 0 {
			return fmt.Errorf("key %d has no device buffer: not on the CUDA backend", k)
		}
		host := runtime.Bytes(data(b))
		dev := make([]byte, len(st.Tensors[k].Data))
		if err := st.DeviceToHost(k, dev); err != nil {
			return fmt.Errorf("key %d: %w", k, err)
		}
		if len(dev) != len(host) {
			return fmt.Errorf("key %d: %d bytes on the device, %d staged", k, len(dev), len(host))
		}
		for i := range host {
			if dev[i] != host[i] {
				per := len(host) / len(indices)
				return fmt.Errorf("key %d, sample %d (index %d), byte %d: the device holds %d, the host staged %d",
					k, i/per, indices[i/per], i%per, dev[i], host[i])
			}
		}
		return nil
	}
}
