#pragma once
// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex. The plan records
// the hash of every analysed file so that `apply` can refuse a plan made
// for other bytes; no crypto library is linked for this one digest.
#include <string>
#include <string_view>

namespace npufuse::util {

std::string sha256_hex(std::string_view bytes);

}  // namespace npufuse::util
