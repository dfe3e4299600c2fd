package policy

import "context"

// newUninstrumentedRuntime is a Runtime that compiles modules as they are, without the
// interrupt checks: the original side of the differential test. Nothing can stop its
// guests at a deadline, so it runs only trusted test guests.
func newUninstrumentedRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	r, err := NewRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.uninstrumented = true
	return r, nil
}
