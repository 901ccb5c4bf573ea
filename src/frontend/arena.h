#pragma once
// Bump allocator for AST nodes: memory comes from large blocks and is released
// all at once with the arena, so building a tree costs a pointer increment per
// node and freeing it costs one free per block. Only trivially destructible
// types may live here (nothing in an arena ever has its destructor run).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace npufuse::frontend {

// A read-only view of `size` consecutive elements stored in an arena.
template <class T>
struct Span {
  T* data = nullptr;
  uint32_t size = 0;

  T* begin() const { return data; }
  T* end() const { return data + size; }
  T& operator[](size_t i) const { return data[i]; }
  bool empty() const { return size == 0; }
};

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&& other) noexcept { *this = std::move(other); }
  Arena& operator=(Arena&& other) noexcept {
    if (this != &other) {
      release();
      blocks_ = std::move(other.blocks_);
      cursor_ = other.cursor_;
      limit_ = other.limit_;
      other.blocks_.clear();
      other.cursor_ = other.limit_ = nullptr;
    }
    return *this;
  }
  ~Arena() { release(); }

  void* allocate(size_t bytes, size_t align) {
    uintptr_t p = (reinterpret_cast<uintptr_t>(cursor_) + align - 1) & ~(uintptr_t)(align - 1);
    if (p + bytes > reinterpret_cast<uintptr_t>(limit_)) {
      grow(bytes + align);
      p = (reinterpret_cast<uintptr_t>(cursor_) + align - 1) & ~(uintptr_t)(align - 1);
    }
    cursor_ = reinterpret_cast<char*>(p + bytes);
    return reinterpret_cast<void*>(p);
  }

  template <class T, class... Args>
  T* make(Args&&... args) {
    static_assert(std::is_trivially_destructible_v<T>, "arena objects are never destroyed");
    return new (allocate(sizeof(T), alignof(T))) T(std::forward<Args>(args)...);
  }

  // Copies `n` elements into the arena and returns the span over them.
  template <class T>
  Span<T> copy(const T* src, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n == 0) return {};
    T* dst = static_cast<T*>(allocate(sizeof(T) * n, alignof(T)));
    std::memcpy(static_cast<void*>(dst), src, sizeof(T) * n);
    return {dst, static_cast<uint32_t>(n)};
  }

  size_t bytes_reserved() const { return blocks_.size() * kBlockSize; }

 private:
  static constexpr size_t kBlockSize = 256 * 1024;

  // Standard-size blocks are recycled through a per-thread pool: parsing many
  // files one after another then reuses warm memory instead of mapping fresh
  // pages for every file. An arena that outlives its thread's pool (one held
  // in static storage is released after thread-local objects are destroyed)
  // frees its blocks directly: the flag is trivially destructible, so it can
  // still be read then.
  struct BlockPool {
    std::vector<char*> free_blocks;
    ~BlockPool() {
      for (char* b : free_blocks) std::free(b);
      free_blocks.clear();
      pool_gone() = true;
    }
  };
  static bool& pool_gone() {
    thread_local bool gone = false;
    return gone;
  }
  // Null once the pool of this thread has been destroyed.
  static BlockPool* pool() {
    if (pool_gone()) return nullptr;
    thread_local BlockPool p;
    return &p;
  }
  static constexpr size_t kMaxPooledBlocks = 64;

  void grow(size_t at_least) {
    size_t size = at_least > kBlockSize ? at_least : kBlockSize;
    char* block = nullptr;
    BlockPool* reuse = pool();
    if (size == kBlockSize && reuse && !reuse->free_blocks.empty()) {
      block = reuse->free_blocks.back();
      reuse->free_blocks.pop_back();
    } else {
      block = static_cast<char*>(std::malloc(size));
      if (!block) throw std::bad_alloc();
    }
    blocks_.push_back({block, size});
    cursor_ = block;
    limit_ = block + size;
  }
  void release() {
    BlockPool* reuse = pool();
    for (auto [b, size] : blocks_) {
      if (size == kBlockSize && reuse && reuse->free_blocks.size() < kMaxPooledBlocks) {
        reuse->free_blocks.push_back(b);
      } else {
        std::free(b);
      }
    }
    blocks_.clear();
  }

  std::vector<std::pair<char*, size_t>> blocks_;
  char* cursor_ = nullptr;
  char* limit_ = nullptr;
};

}  // namespace npufuse::frontend
