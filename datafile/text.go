package datafile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The text form of a data file is JSON: an envelope that names the kind and
// the version, holding exactly one of Plan, Counts or Merged, with the Go
// field names of this package. It is canonical (WriteText of equal values
// gives equal bytes), so it serves as the dump for inspection (plist --dump)
// and as the input of report goldens.
type textEnvelope struct {
	Kind    string
	Version int
	Plan    *Plan   `json:",omitempty"`
	Counts  *Counts `json:",omitempty"`
	Merged  *Merged `json:",omitempty"`
}

// TextVersion is the version of the text form.
const TextVersion = 1

// WriteText writes v, a *Plan, *Counts or *Merged, in the text form.
func WriteText(w io.Writer, v any) error {
	env := textEnvelope{Version: TextVersion}
	switch v := v.(type) {
	case *Plan:
		env.Kind, env.Plan = "pbi", v
	case *Counts:
		env.Kind, env.Counts = "pbo", v
	case *Merged:
		env.Kind, env.Merged = "pbt", v
	default:
		return fmt.Errorf("write text: unsupported type %T", v)
	}
	b, err := json.MarshalIndent(&env, "", "  ")
	if err != nil {
		return fmt.Errorf("write text: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// ReadText reads the text form and returns a *Plan, *Counts or *Merged,
// validated as the binary reader validates.
func ReadText(r io.Reader) (any, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTextSize+1))
	if err != nil {
		return nil, fmt.Errorf("read text: %w", err)
	}
	if len(b) > maxTextSize {
		return nil, fmt.Errorf("read text: larger than %d bytes", maxTextSize)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var env textEnvelope
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("read text: %w", err)
	}
	if env.Version != TextVersion {
		return nil, fmt.Errorf("read text: version %d, want %d", env.Version, TextVersion)
	}
	var v interface{ Validate() error }
	switch {
	case env.Kind == "pbi" && env.Plan != nil && env.Counts == nil && env.Merged == nil:
		v = env.Plan
	case env.Kind == "pbo" && env.Counts != nil && env.Plan == nil && env.Merged == nil:
		v = env.Counts
	case env.Kind == "pbt" && env.Merged != nil && env.Plan == nil && env.Counts == nil:
		if len(env.Merged.Discarded) == 0 {
			env.Merged.Discarded = nil // none, as WriteText and the binary form say it
		}
		v = env.Merged
	default:
		return nil, fmt.Errorf("read text: kind %q does not match its content", env.Kind)
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("read text: %w", err)
	}
	return v, nil
}

// maxTextSize bounds what ReadText reads.
const maxTextSize = 1 << 30
