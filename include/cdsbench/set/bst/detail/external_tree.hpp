// Quiescent walks shared by the external (leaf-oriented) BSTs: visiting every node (teardown,
// node counts), the leaves in key order (for_each_key) with their depths, and the shape and
// order check behind check_invariants. Only ever called while no operation runs, so plain
// acquire loads suffice and nothing here is on a hot path.
//
// A tree describes its nodes with a `Shape`: static functions over a node handle H (a node
// pointer, or a tagged child pointer)
//   bool present(H)              the handle names a node (child pointers may be null)
//   bool is_leaf(H)
//   Key key(H)
//   H left(H), H right(H)        internal nodes only
//   const char* problem(H)       nullptr when the node is sound at quiescence (no flagged or
//                                marked edge, no update in progress, no lock held), else why
// Walks use an explicit stack: an unbalanced tree (keys inserted in order) is as deep as it
// is large, too deep for recursion.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace cdsb::detail {

// Every node reachable from `root`, parents before children. A node's children are read
// before fn sees it, so fn may free the node.
template <class Shape, class H, class Fn>
void visit_external_tree(H root, Fn&& fn) {
  std::vector<H> stack{root};
  while (!stack.empty()) {
    const H n = stack.back();
    stack.pop_back();
    if (!Shape::present(n)) continue;
    if (!Shape::is_leaf(n)) {
      stack.push_back(Shape::right(n));
      stack.push_back(Shape::left(n));
    }
    fn(n);
  }
}

// The leaves under `root` from left to right (in key order when the tree is sound), each with
// its depth: the nodes a search for its key reads, `root` (depth 1) and the leaf included.
template <class Shape, class H, class Fn>
void for_each_leaf_depth(H root, Fn&& fn) {
  std::vector<std::pair<H, std::size_t>> stack{{root, 1}};
  while (!stack.empty()) {
    const auto [n, depth] = stack.back();
    stack.pop_back();
    if (!Shape::present(n)) continue;
    if (Shape::is_leaf(n)) {
      fn(n, depth);
    } else {
      stack.push_back({Shape::right(n), depth + 1});
      stack.push_back({Shape::left(n), depth + 1});
    }
  }
}

template <class Shape, class H, class Fn>
void for_each_leaf(H root, Fn&& fn) {
  for_each_leaf_depth<Shape>(root, [&](H n, std::size_t) { fn(n); });
}

// The leaf with the largest key under `root` when the tree is sound (check_external_tree):
// the end of the right spine; a tree finds its sentinel leaf here in O(depth), not by a walk.
template <class Shape, class H>
H rightmost_leaf(H n) {
  while (Shape::present(n) && !Shape::is_leaf(n)) n = Shape::right(n);
  return n;
}

// External-tree shape and order: every internal node has two children; every key of a left
// subtree is below its parent's key and every key of a right subtree at or above it (the
// routing rule `key < node.key ? left : right`); leaf keys are therefore strictly increasing
// from left to right (no key twice); and every node passes Shape::problem. Returns "" when
// sound, else the first violation found. `nodes` (if given) receives the number of nodes.
template <class Shape, class H>
std::string check_external_tree(H root, std::size_t* nodes = nullptr) {
  using Key = decltype(Shape::key(root));
  struct Item {
    H node;
    bool has_lo, has_hi;  // the subtree's keys lie in [lo, hi)
    Key lo, hi;
  };
  std::vector<Item> stack{{root, false, false, Key{}, Key{}}};
  std::size_t count = 0;
  std::string error;
  while (!stack.empty() && error.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (!Shape::present(it.node)) {
      error = "an internal node has a missing child";
      break;
    }
    ++count;
    const Key k = Shape::key(it.node);
    // Built only for a message: this walk is part of every trial's validation.
    const auto kind = [&] { return std::string(Shape::is_leaf(it.node) ? "leaf " : "internal node "); };
    if ((it.has_lo && k < it.lo) || (it.has_hi && !(k < it.hi))) {
      error = kind() + std::to_string(k) + " lies outside its subtree's key range [" +
              (it.has_lo ? std::to_string(it.lo) : std::string("-inf")) + ", " +
              (it.has_hi ? std::to_string(it.hi) : std::string("+inf")) + ")";
      break;
    }
    if (const char* problem = Shape::problem(it.node)) {
      error = kind() + std::to_string(k) + ": " + problem;
      break;
    }
    if (!Shape::is_leaf(it.node)) {
      stack.push_back({Shape::right(it.node), true, it.has_hi, k, it.hi});
      stack.push_back({Shape::left(it.node), it.has_lo, true, it.lo, k});
    }
  }
  if (nodes) *nodes = count;
  return error;
}

}  // namespace cdsb::detail
