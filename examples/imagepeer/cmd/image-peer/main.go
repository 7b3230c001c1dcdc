// Command image-peer writes the GPU peer comparison's .npy files and times
// the generated loader on them (examples/imagepeer; make gpu-suite builds it
// with -tags cuda, and .ci/gpu-suite runs it on a lent GPU):
//
//	image-peer write DIR N              N samples of image, mask and label
//	image-peer epoch DIR DEVICE EPOCHS  one warm-up epoch, then EPOCHS timed
//
// epoch prints one line: samples/s, GB/s of staged bytes, and the ring's
// depth at the end. DEVICE is cpu or cuda; with cuda the GPU is required
// (runtime.Options.RequireGPU), so a machine without one fails instead of
// timing the CPU. The timed span ends after Close, which waits for the last
// copies to the device.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/loadergen/loadergen/examples/imagepeer"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("image-peer: ")
	if err := run(os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "write":
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			return fmt.Errorf("write: N %q is not a count >= 1", args[2])
		}
		return write(args[1], n)
	case len(args) == 4 && args[0] == "epoch":
		epochs, err := strconv.Atoi(args[3])
		if err != nil || epochs < 1 {
			return fmt.Errorf("epoch: EPOCHS %q is not a count >= 1", args[3])
		}
		return epoch(args[1], args[2], epochs)
	}
	return errors.New("usage: image-peer write DIR N | image-peer epoch DIR cpu|cuda EPOCHS")
}

// write writes n samples into dir: image i holds i/n + c/10 + its pixel's
// position on a 0..1 ramp, mask i its pixel index plus i mod 256, label i
// is i mod 1000, so that any sample's bytes tell which sample it is.
func write(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const c, h, w = 3, 224, 224
	image, err := npy.Create(filepath.Join(dir, "image.npy"), runtime.Float32, []int{n, c, h, w})
	if err != nil {
		return err
	}
	defer image.Abort()
	mask, err := npy.Create(filepath.Join(dir, "mask.npy"), runtime.Uint8, []int{n, h, w})
	if err != nil {
		return err
	}
	defer mask.Abort()
	imageBuf, maskBuf := make([]byte, 4*c*h*w), make([]byte, h*w)
	labels := make([]byte, 8*n)
	for i := range n {
		for p := range c * h * w {
			v := float32(i)/float32(n) + float32(p/(h*w))/10 + float32(p%(h*w))/float32(h*w)
			binary.LittleEndian.PutUint32(imageBuf[4*p:], math.Float32bits(v))
		}
		for p := range maskBuf {
			maskBuf[p] = byte(p + i)
		}
		binary.LittleEndian.PutUint64(labels[8*i:], uint64(i%1000))
		if _, err := image.Write(imageBuf); err != nil {
			return err
		}
		if _, err := mask.Write(maskBuf); err != nil {
			return err
		}
	}
	if err := errors.Join(image.Close(), mask.Close()); err != nil {
		return err
	}
	return npy.Write(filepath.Join(dir, "label.npy"), runtime.Int64, []int{n}, labels)
}

// epoch runs a warm-up epoch on device (the page cache, the ring's depth),
// then times epochs more, and prints the rate.
func epoch(dir, device string, epochs int) error {
	src, err := imagepeer.OpenImagesFiles(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	l, err := imagepeer.NewImagesLoader(src, runtime.Options{
		Device: device, RequireGPU: device != "cpu", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	defer l.Close()
	if err := drain(l, 0); err != nil {
		return err
	}
	before, start := l.Stats(), time.Now()
	for e := 1; e <= epochs; e++ {
		if err := drain(l, e); err != nil {
			return err
		}
	}
	after := l.Stats()
	if err := l.Close(); err != nil {
		return err
	}
	r := after.Since(before, time.Since(start))
	fmt.Printf("%.0f samples/s %.2f GB/s prefetch %d\n", r.SamplesPerSecond, r.BytesPerSecond/1e9, after.Prefetch)
	return nil
}

// drain runs one epoch, consuming nothing: the copies to the device are
// what is timed.
func drain(l *imagepeer.ImagesLoader, epoch int) error {
	for _, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			return fmt.Errorf("epoch %d: %w", epoch, err)
		}
	}
	return nil
}
