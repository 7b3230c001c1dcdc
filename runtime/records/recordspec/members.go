package recordspec

import "strings"

// SplitMember splits a key's member, named EXT or NAME.EXT (the part of
// a WebDataset member's name after the sample key: 000042.jpg's jpg,
// 000042.left.jpg's left.jpg), into its NAME ("" for none) and its
// extension, what follows the last '.'. named reports a '.', so that
// ".jpg" is named with an empty NAME.
func SplitMember(member string) (name, ext string, named bool) {
	i := strings.LastIndexByte(member, '.')
	if i < 0 {
		return "", member, false
	}
	return member[:i], member[i+1:], true
}

// Alternatives splits a key's member into the members it may read, in
// order of preference: WebDataset's "jpg;jpeg;png" reads a sample's .jpg
// when it has one, else its .jpeg, else its .png. A member without ';' is
// its only alternative. The schema allows alternatives of image members
// only.
func Alternatives(member string) []string { return strings.Split(member, ";") }

// ImageMember reports whether a member (EXT or NAME.EXT, not a list of
// alternatives) is an image: jpg, jpeg or png.
func ImageMember(member string) bool {
	_, ext, _ := SplitMember(member)
	return ext == "jpg" || ext == "jpeg" || ext == "png"
}

// ArrayMember reports whether a key's member is an array: a .npy file
// holding one sample, named npy or NAME.npy (000042.npy,
// 000042.depth.npy).
func ArrayMember(member string) bool {
	name, ext, named := SplitMember(member)
	return ext == "npy" && (!named || name != "")
}
