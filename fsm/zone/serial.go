package zone

// SerialGreater reports whether serial a is greater than b in RFC 1982
// sequence space arithmetic (SERIAL_BITS = 32). For a pair exactly 2^31
// apart the comparison is undefined; SerialGreater reports false.
func SerialGreater(a, b uint32) bool {
	return a != b && ((a > b && a-b < 1<<31) || (a < b && b-a > 1<<31))
}

// nextSerial returns the serial for a zone whose serial was old, given the
// serial a change asked for (wanted, when hasWanted). The result is always
// greater than old in RFC 1982 terms: the wanted serial when it is greater,
// old+1 otherwise.
func nextSerial(old, wanted uint32, hasWanted bool) uint32 {
	if hasWanted && SerialGreater(wanted, old) {
		return wanted
	}
	return old + 1
}
