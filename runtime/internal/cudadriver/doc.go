// Package cudadriver asks the CUDA driver that the cuda build loads at run
// time what it found: whether the CUDA backend can run, and on how many
// devices. Its code is in cuda builds only (-tags cuda).
package cudadriver
