// Command imagenet-demo writes synthetic WebDataset shards of JPEG photos
// when they are absent, then runs the generated ImageNet loader over them
// (random-resized crops of 224 x 224, flips, normalised float32) and
// prints the images per second of each epoch: make demo-images. With
// -root, the loader reads the shards from there instead, such as an S3
// bucket serving the -data directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/loadergen/loadergen/examples/imagenet"
	"github.com/loadergen/loadergen/internal/fixture/photoshards"
	"github.com/loadergen/loadergen/runtime"
)

func main() {
	data := flag.String("data", ".demo-data/imagenet", "directory of the shards (written when absent)")
	samples := flag.Int("samples", 1000, "photos to write when the shards are absent")
	epochs := flag.Int("epochs", 3, "epochs to run; the first warms the page cache")
	workers := flag.Int("workers", 0, "loader workers (0: GOMAXPROCS)")
	root := flag.String("root", "", "where the loader reads the shards: -data when empty, or a URL serving them (s3://bucket/prefix, https://host/path)")
	flag.Parse()
	if err := run(*data, *root, *samples, *epochs, *workers); err != nil {
		log.Fatal(err)
	}
}

func run(dir, root string, samples, epochs, workers int) error {
	if _, err := os.Stat(filepath.Join(dir, "train-0.tar")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		fmt.Printf("writing %d synthetic 500 x 375 JPEG photos (q90) in 4 shards, and as class folders, to %s\n", samples, dir)
		set := photoshards.Set{Samples: samples, Shards: 4, Width: 500, Height: 375, Classes: 1000, Quality: 90, Seed: 1}
		if err := set.WriteShards(dir, "train-%d.tar"); err != nil {
			return err
		}
		// The same photos as class folders, for make peer-images'
		// torchvision ImageFolder.
		if err := set.WriteFolder(filepath.Join(dir, "folder")); err != nil {
			return err
		}
	}
	slog.SetLogLoggerLevel(slog.LevelWarn)
	if root == "" {
		root = dir
	}
	src, err := imagenet.OpenImageNetRecords(root)
	if err != nil {
		return err
	}
	defer src.Close()
	l, err := imagenet.NewImageNetLoader(src, runtime.Options{Device: "cpu", Workers: workers})
	if err != nil {
		return err
	}
	defer l.Close()
	for epoch := range epochs {
		t0 := time.Now()
		n := 0
		for b, err := range l.Epoch(context.Background(), epoch) {
			if err != nil {
				return err
			}
			n += len(b.Indices)
		}
		el := time.Since(t0)
		fmt.Printf("epoch %d: %d images in %v: %.0f img/s\n", epoch, n, el.Round(time.Millisecond), float64(n)/el.Seconds())
	}
	return nil
}
