package gen

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/loadergen/loadergen/runtime"
)

// cudaBackendNote follows the first line of a plan for a CUDA device: what
// will actually run.
const cudaBackendNote = "runs on the CUDA backend only in a binary built with -tags cuda, on a machine with a driver and a GPU;\n" +
	"elsewhere (the default build included) on the CPU backend, saying so once at start"

// WriteTable prints the plan for people: each setting with where it came
// from, one row per key, the total, and the reason for the stream decision.
func (p *Plan) WriteTable(w io.Writer) error {
	rp := p.Runtime
	fmt.Fprintf(w, "%s: batch %d, device %s\n", rp.Name, rp.BatchSize, rp.Device)
	if rp.Device != "cpu" {
		// The device is the schema's wish; the build and the machine the
		// loader runs in decide the backend, and this tool sees neither.
		fmt.Fprintln(w, cudaBackendNote)
	}
	fmt.Fprint(w, "\nsettings:\n")
	for _, s := range p.settings() {
		fmt.Fprintf(w, "  %s=%s (%s)\n", s.Name, s.Value, s.From)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "key\trole\tdtype\tsample shape\tbatch bytes\tMiB\tstream\tpriority\t")
	for _, k := range rp.Keys {
		shape := fmt.Sprint(k.Shape)
		if k.Ragged {
			shape = "up to " + shape // the first axis is a maximum
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.1f\t%d\t%s\t\n",
			k.Name, k.Role, k.DType, shape, k.BatchBytes, float64(k.BatchBytes)/(1<<20), k.Stream, k.Priority)
	}
	fmt.Fprintf(tw, "total\t\t\t\t%d\t%.1f\t\t\t\n", rp.BatchBytes, rp.BatchMiB)
	if err := tw.Flush(); err != nil {
		return err
	}
	state := "off"
	if rp.UseStreams {
		state = fmt.Sprintf("on, %d streams", rp.NumStreams)
	}
	_, err := fmt.Fprintf(w, "\nstreams %s: %s\n", state, rp.Reason)
	return err
}

// planJSON is what plan -json prints: the runtime plan's fields under the
// names of the contract, and, added beside them, what the table shows and
// the layout of a staging slot.
type planJSON struct {
	runtime.Plan
	Keys      []keyJSON              `json:"keys"` // the plan's keys, each with its offset
	SlotBytes int64                  `json:"slot_bytes"`
	Loader    runtime.LoaderDefaults `json:"loader"`
	Settings  []planSetting          `json:"settings"`
}

type keyJSON struct {
	runtime.Key
	Offset int64 `json:"offset"` // start of the key's region in a staging slot
}

// WriteJSON prints the plan with the field names of the plan -json contract
// and the additions of planJSON, on one line, its text as written (no HTML
// escaping of "<" in reasons).
func (p *Plan) WriteJSON(w io.Writer) error {
	out := planJSON{Plan: p.Runtime, SlotBytes: p.Runtime.SlotBytes, Loader: p.Runtime.Loader, Settings: p.settings()}
	for _, k := range p.Runtime.Keys {
		out.Keys = append(out.Keys, keyJSON{Key: k, Offset: k.Offset})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("plan json: %w", err)
	}
	return nil
}
