// How a structure keeps the keys it holds.
//
// A key of a fixed size (an integer, a Digest160) is kept as it is. A byte-string key is given
// as a std::string_view (Key = std::string_view: the caller's bytes, valid for the call, so a
// server can look up the bytes of a request in place) and kept as a ByteString, an immutable
// copy the structure owns, freed with whatever holds it (a node: when the reclaimer frees the
// node). A structure's quiescent helpers hand out views of its copies.
//
//   KeyStorage<Key>::type          what a node stores for a Key
//   KeyStorage<Key>::view(stored)  the stored key as a Key, to compare with the caller's
#pragma once

#include <compare>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace cdsb {

// An owned, immutable copy of a byte string: a pointer and a length (16 bytes; the bytes are
// one allocation of their own, none for the empty string).
class ByteString {
 public:
  ByteString() = default;
  explicit ByteString(std::string_view bytes) : size_(bytes.size()), data_(size_ ? new char[size_] : nullptr) {
    if (size_) std::memcpy(data_, bytes.data(), size_);
  }
  ByteString(const ByteString& other) : ByteString(other.view()) {}
  ByteString& operator=(const ByteString&) = delete;
  ~ByteString() { delete[] data_; }

  std::string_view view() const { return {data_, size_}; }

 private:
  std::size_t size_ = 0;
  char* data_ = nullptr;
};

template <class Key>
struct KeyStorage {
  using type = Key;
  static const Key& view(const Key& k) { return k; }
};

template <>
struct KeyStorage<std::string_view> {
  using type = ByteString;
  static std::string_view view(const ByteString& k) { return k.view(); }
};

template <class Key>
using stored_key_t = typename KeyStorage<Key>::type;

template <class Key>
inline constexpr bool is_byte_string_key = std::is_same_v<Key, std::string_view>;

}  // namespace cdsb
