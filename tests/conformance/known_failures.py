"""Cases that find a real kerasish difference not fixed yet: case name (or test id) -> why.

A listed case that fails is reported as an expected failure with this reason and what differs;
one that passes fails the harness (take it off the list). The README counts these.
"""

KNOWN_FAILURES = {
}
