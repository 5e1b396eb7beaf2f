import Foundation

/// Monotonic nanoseconds (CLOCK_MONOTONIC through the vDSO: about 20 ns a read).
@inline(__always)
func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Seconds since `start` (a `nanoseconds()` reading).
func seconds(since start: UInt64) -> Double { Double(nanoseconds() - start) / 1e9 }
