#pragma once
// SHA-256 of a byte string, as lowercase hex (OpenSSL's libcrypto). The plan
// records the hash of every analysed file so that `apply` can refuse a plan
// made for other bytes; tree scans key their cache by it.
#include <string>
#include <string_view>

namespace npufuse::util {

std::string sha256_hex(std::string_view bytes);

}  // namespace npufuse::util
