# fsdp_write_link_libraries(<target>...): the libraries each target links
# directly, one name per line, in ${CMAKE_BINARY_DIR}/link-libraries/<target>.txt.
# test/Layering follows them through the project's own libraries to check its
# levels (the CPU's libraries link no GPU dialect). Call it after every target
# is defined.
function(fsdp_write_link_libraries)
  foreach(target IN LISTS ARGN)
    get_target_property(libraries "${target}" LINK_LIBRARIES)
    set(names "")
    foreach(library IN LISTS libraries)
      # $<LINK_ONLY:X> links X; flags and other generator expressions name no library.
      if(library MATCHES "^\\$<LINK_ONLY:([^>]+)>$")
        set(library "${CMAKE_MATCH_1}")
      endif()
      if(NOT library MATCHES "^[-$/]" AND NOT library MATCHES "[<>]")
        list(APPEND names "${library}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES names)
    list(SORT names)
    list(JOIN names "\n" text)
    file(WRITE "${CMAKE_BINARY_DIR}/link-libraries/${target}.txt" "${text}\n")
  endforeach()
endfunction()
