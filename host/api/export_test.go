package api

// SetTestHooks installs s's test hooks (see serverHooks); call it before s serves. Either
// may be nil.
func SetTestHooks(s *Server, slotWait func(id string), served func()) {
	s.hooks = serverHooks{slotWait: slotWait, served: served}
}
