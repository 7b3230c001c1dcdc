package zarr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// Store is a zarr hierarchy (v2 or v3): a group, an array, or a group of
// groups and arrays, in a local directory or at a remote root (see
// OpenStore). It is safe for concurrent use.
type Store struct {
	// OpenStore writes every field before it returns the Store; nothing
	// writes them after, so concurrent opens read them without a lock.
	root  storage.Root
	cache *Cache      // shared by the arrays opened through the store
	bg    *background // what its arrays do in the background, until Close
	// consolidated holds the entries of a v2 .zmetadata at the root, by key
	// ("raw/.zarray"), or is nil. It is written once, by OpenStore.
	consolidated map[string]*metaDoc
	// fetchedMu guards fetched, the metadata files read from a remote
	// root, by key ("raw/.zarray"): node and doc add an entry the first
	// time they need a file and fill it before closing its done; later
	// readers wait for done.
	fetchedMu sync.Mutex
	fetched   map[string]*fetchedDoc
}

// remote reports whether the store is at a URL: node then requests a
// node's metadata files at once, and doc keeps what it read in fetched.
func (s *Store) remote() bool {
	_, local := s.root.Local()
	return !local
}

// fetchedDoc is a metadata file of a remote store, read once: doc and
// err are set before done is closed.
type fetchedDoc struct {
	done chan struct{}
	doc  *metaDoc
	err  error
}

// nodeFiles are the metadata files that opening a node reads, some of
// them: node requests those of a remote node together, so that opening
// it costs one round trip rather than one per file.
var nodeFiles = []string{"zarr.json", ".zarray", ".zgroup", ".zattrs"}

// OpenStore opens the zarr hierarchy at root: a local directory, or a
// URL, s3://bucket/prefix or https://host/path (package storage reads
// those, with retries, read-ahead and an optional disk cache). Arrays
// opened through it keep their decoded chunks in cache, or in SharedCache
// when cache is nil. A v2 .zmetadata at the root (consolidated metadata)
// is read once and preferred to the files it describes.
func OpenStore(root string, cache *Cache) (*Store, error) {
	if cache == nil {
		var err error
		if cache, err = SharedCache(); err != nil {
			return nil, err
		}
	}
	r, err := storage.Open(root)
	if err != nil {
		return nil, fmt.Errorf("zarr store: %w", err)
	}
	if dir, local := r.Local(); local {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("zarr store: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("zarr store %s: not a directory", root)
		}
	}
	s := newStore(r, cache)
	if err := s.readConsolidated(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// newStore returns the store at root r, its arrays' chunks kept in cache,
// before its consolidated metadata is read.
func newStore(r storage.Root, cache *Cache) *Store {
	return &Store{root: r, cache: cache, bg: newBackground(), fetched: map[string]*fetchedDoc{}}
}

// Close stops what the store's arrays do in the background (ReadAhead's
// loads of shard indexes) and what its root does (a remote root's
// read-ahead), drops what they hold, and returns once none of it runs.
// Reads after Close still work, without read-ahead.
func (s *Store) Close() error {
	s.bg.close()
	return s.root.Close()
}

// background runs goroutines for a store until it closes: their context
// is done once it does, and close waits for them.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	// mu orders start against close: no goroutine starts once closed
	// is set, so that close's wait sees every one started.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // the goroutines running
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// start runs f in a goroutine of b, under b's context, unless b is
// closed.
func (b *background) start(f func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.ctx)
	}()
}

// close cancels b's goroutines and waits for them to end.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// Open opens the array at dir (a directory or a URL, as OpenStore takes)
// with the shared cache.
func Open(dir string) (*Array, error) {
	s, err := OpenStore(dir, nil)
	if err != nil {
		return nil, err
	}
	return s.Array("")
}

// readConsolidated loads .zmetadata, when present.
func (s *Store) readConsolidated() error {
	file := s.root.URL(".zmetadata")
	text, err := storage.ReadMetadata(context.Background(), s.root, ".zmetadata")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zarr store: %w", err)
	}
	top, err := parseDoc(file, text, 0)
	if err != nil {
		return err
	}
	var format int
	if err := top.get("zarr_consolidated_format", &format, true); err != nil {
		return err
	}
	if format != 1 {
		return top.errorf("zarr_consolidated_format", "zarr_consolidated_format %d (this reader knows 1)", format)
	}
	if !top.has("metadata") {
		return top.errorf("metadata", "field \"metadata\" is missing")
	}
	entries, err := parseDoc(file, text, top.fields["metadata"].off)
	if err != nil {
		return err
	}
	s.consolidated = map[string]*metaDoc{}
	for key, f := range entries.fields {
		if s.consolidated[key], err = parseDoc(file, text, f.off); err != nil {
			return err
		}
	}
	return nil
}

// nodeKind says what a path of a store holds.
type nodeKind uint8

const (
	v2Array nodeKind = iota + 1
	v2Group
	v3Array
	v3Group
)

// dir returns where node p is (see zarrspec.CheckPath), for messages: its
// directory, or its URL.
func (s *Store) dir(p string) (string, error) {
	if err := zarrspec.CheckPath(p); err != nil {
		return "", err
	}
	return s.root.URL(strings.Trim(p, "/")), nil
}

// node reads the metadata of node p: zarr.json (v3), else .zarray or
// .zgroup (v2).
func (s *Store) node(p string) (nodeKind, *metaDoc, error) {
	dir, err := s.dir(p)
	if err != nil {
		return 0, nil, err
	}
	if s.remote() {
		var wg sync.WaitGroup
		for _, name := range nodeFiles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.doc(p, name) // its error is doc's again below, if it matters
			}()
		}
		wg.Wait()
	}
	if doc, err := s.doc(p, "zarr.json"); err == nil {
		var nodeType string
		if err := doc.get("node_type", &nodeType, true); err != nil {
			return 0, nil, err
		}
		switch nodeType {
		case "array":
			return v3Array, doc, nil
		case "group":
			return v3Group, doc, nil
		}
		return 0, nil, doc.errorf("node_type", "node_type %q (want \"array\" or \"group\")", nodeType)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, err
	}
	if doc, err := s.doc(p, ".zarray"); err == nil {
		return v2Array, doc, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, err
	}
	if doc, err := s.doc(p, ".zgroup"); err == nil {
		return v2Group, doc, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, err
	}
	return 0, nil, fmt.Errorf("zarr: no array or group at %s (no zarr.json, .zarray or .zgroup): %w", dir, fs.ErrNotExist)
}

// doc reads metadata file name of node p: from the consolidated metadata
// when it has it, else from the file, which a remote store reads once.
func (s *Store) doc(p, name string) (*metaDoc, error) {
	key := path.Join(strings.Trim(p, "/"), name)
	if d, ok := s.consolidated[key]; ok {
		return d, nil
	}
	if !s.remote() {
		return s.readDoc(key)
	}
	s.fetchedMu.Lock()
	f, ok := s.fetched[key]
	if !ok {
		f = &fetchedDoc{done: make(chan struct{})}
		s.fetched[key] = f
	}
	s.fetchedMu.Unlock()
	if !ok {
		f.doc, f.err = s.readDoc(key)
		close(f.done)
	}
	<-f.done
	return f.doc, f.err
}

// readDoc reads and parses metadata file key of the store.
func (s *Store) readDoc(key string) (*metaDoc, error) {
	text, err := storage.ReadMetadata(context.Background(), s.root, key)
	if err != nil {
		return nil, err
	}
	return parseDoc(s.root.URL(key), text, 0)
}

// IsArray reports whether path p of the store holds an array (rather than a
// group); an error when it holds neither.
func (s *Store) IsArray(p string) (bool, error) {
	kind, _, err := s.node(p)
	return kind == v2Array || kind == v3Array, err
}
