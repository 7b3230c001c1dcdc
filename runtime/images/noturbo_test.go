//go:build !turbojpeg

package images

// turbo says the JPEG decoder is libjpeg-turbo's (-tags turbojpeg).
const turbo = false
