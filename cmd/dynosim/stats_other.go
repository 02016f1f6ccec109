//go:build !unix

package main

func peakRSSBytes() int64 { return 0 }
