# Writes the ctest file of the per-structure command-line trials from the registry itself
# (`cdsbench --list --json`), so a registered structure is tested without an edit here.
# Run at build time (tests/CMakeLists.txt) with HARNESS, LINCHECK, OUT, EAGER (the sanitizer
# trees' --reclaim-eager, or empty) and HISTORIES (lincheck's histories per structure).
#
# Each set-workload structure (kinds ordered_set and unordered_map) runs a short trial of 4
# threads on 500 keys per reclaimer of its test variants (eager reclamation in the sanitizer
# trees, so a use-after-free shows at once); one with range queries adds a range-query
# thread. A structure without a thread-safe erase runs concurrent inserts, then a read-only
# mix whose steady prefill ages the shape with deletes on one thread. A map built with other
# keys (digest, bytes) also runs a trial per key type and named hash. "result=PASS" is printed
# only when every trial validated; a sanitizer report aborts before it.
#
# A queue (or a stack, in LIFO mode) runs two trials per reclaimer of its test variants:
# enqueue-dequeue pairs of single items, and split mode with batches.
#
# Each of them with a checker model is also checked for linearizability, one ctest per
# structure (so ctest runs them in parallel): HISTORIES small histories plus 3 long ones,
# shared among its test variants. A peer with a documented violation is left out (lincheck
# prints it when named).
execute_process(COMMAND ${HARNESS} --list --json ${OUT}.json RESULT_VARIABLE status OUTPUT_QUIET)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "registry_tests.cmake: `${HARNESS} --list --json` failed (${status})")
endif()
file(READ ${OUT}.json registry)
string(JSON count LENGTH "${registry}" structures)
math(EXPR last "${count} - 1")
set(lines "")
set(common --threads 4 --duration-ms 300 --latency-sample 16 --trials 2 --pin none)

macro(add_program_test name program regex)
  set(args "")
  foreach(a ${ARGN})
    string(APPEND args " [==[${a}]==]")
  endforeach()
  string(APPEND lines "add_test([==[${name}]==] [==[${program}]==]${args})\n")
  string(APPEND lines "set_tests_properties([==[${name}]==] PROPERTIES PASS_REGULAR_EXPRESSION [==[${regex}]==] TIMEOUT 900)\n")
endmacro()

macro(add_trial name regex)
  set(args "")
  foreach(a ${ARGN})
    string(APPEND args " [==[${a}]==]")
  endforeach()
  string(APPEND lines "add_test([==[${name}]==] [==[${HARNESS}]==]${args})\n")
  string(APPEND lines "set_tests_properties([==[${name}]==] PROPERTIES PASS_REGULAR_EXPRESSION [==[${regex}]==] TIMEOUT 300)\n")
endmacro()

# The reclaimers of structure i's test variants with its default allocator, into `reclaimers`:
# a command-line trial (or two) runs per reclaimer.
macro(test_reclaimers_of i)
  set(reclaimers "")
  string(JSON default_allocator GET "${registry}" structures ${i} variants 0 allocator)
  string(JSON variants LENGTH "${registry}" structures ${i} variants)
  math(EXPR last_variant "${variants} - 1")
  foreach(v RANGE ${last_variant})
    string(JSON reclaimer GET "${registry}" structures ${i} variants ${v} reclaimer)
    string(JSON allocator GET "${registry}" structures ${i} variants ${v} allocator)
    string(JSON test GET "${registry}" structures ${i} variants ${v} test)
    if(test AND allocator STREQUAL default_allocator)
      list(APPEND reclaimers ${reclaimer})
    endif()
  endforeach()
endmacro()

foreach(i RANGE ${last})
  string(JSON name GET "${registry}" structures ${i} name)
  string(JSON kind GET "${registry}" structures ${i} kind)
  if(NOT kind MATCHES "^(ordered_set|unordered_map|queue|stack)$")
    continue()
  endif()
  string(MAKE_C_IDENTIFIER "${name}" id)
  string(JSON model GET "${registry}" structures ${i} model)
  string(JSON known_violation GET "${registry}" structures ${i} known_violation)
  if(NOT model STREQUAL "" AND known_violation STREQUAL "")
    add_program_test(lincheck_${id} ${LINCHECK} "\nresult=PASS\n" --ds ${name} --histories ${HISTORIES} --split-variants
                     --out ${OUT}.lincheck/${id})
  endif()
  test_reclaimers_of(${i})
  # A queue, or a stack in LIFO mode: enqueue-dequeue pairs of single items on a prefilled
  # queue, and split mode (2 producers, 2 consumers draining to the end) with batches of 20.
  if(kind MATCHES "^(queue|stack)$")
    foreach(reclaimer ${reclaimers})
      add_trial(cli_trial_${id}_${reclaimer}_pairs "\nresult=PASS\n" --ds ${name} --reclaimer ${reclaimer} ${EAGER}
                --queue-mode pairs --prefill-items 100 ${common})
      add_trial(cli_trial_${id}_${reclaimer}_split "\nresult=PASS\n" --ds ${name} --reclaimer ${reclaimer} ${EAGER}
                --queue-mode split --producers 2 --batch 20 ${common})
    endforeach()
    continue()
  endif()
  string(JSON range_queries GET "${registry}" structures ${i} range_queries)
  string(JSON concurrent_erase GET "${registry}" structures ${i} concurrent_erase)
  set(rq "")
  if(range_queries)
    set(rq --rq 5 --rq-threads 1 --rq-size 50)
  endif()
  foreach(reclaimer ${reclaimers})
    if(concurrent_erase)
      add_trial(cli_trial_${id}_${reclaimer} "\nresult=PASS\n" --ds ${name} --reclaimer ${reclaimer} ${EAGER}
                --key-range 500 --insert 30 --delete 30 ${rq} ${common})
    else()
      add_trial(cli_trial_${id}_${reclaimer}_inserts "\nresult=PASS\n" --ds ${name} --reclaimer ${reclaimer} ${EAGER}
                --key-range 20000 --insert 30 --delete 0 --prefill none ${rq} ${common})
      add_trial(cli_trial_${id}_${reclaimer}_read_only "\nprefill_converged=true\n.*\nresult=PASS\n" --ds ${name}
                --reclaimer ${reclaimer} ${EAGER} --key-range 4000 --insert 0 --delete 0 ${common})
    endif()
  endforeach()
  # A map built with other keys (digest, bytes): a trial per key type and named hash (its
  # default variant).
  string(JSON key_types LENGTH "${registry}" structures ${i} key_hashes)
  if(key_types GREATER 0)
    math(EXPR last_key_type "${key_types} - 1")
    foreach(t RANGE ${last_key_type})
      string(JSON keys MEMBER "${registry}" structures ${i} key_hashes ${t})
      string(JSON hashes LENGTH "${registry}" structures ${i} key_hashes ${keys})
      math(EXPR last_hash "${hashes} - 1")
      foreach(h RANGE ${last_hash})
        string(JSON hash GET "${registry}" structures ${i} key_hashes ${keys} ${h})
        add_trial(cli_${keys}_${id}_${hash} "\nresult=PASS\n" --ds ${name} --keys ${keys} --hash ${hash} ${EAGER}
                  --key-range 500 --insert 20 --delete 20 --find-or-insert 10 ${common})
      endforeach()
    endforeach()
  endif()
endforeach()
file(WRITE ${OUT}.tmp "${lines}")
file(RENAME ${OUT}.tmp ${OUT})
