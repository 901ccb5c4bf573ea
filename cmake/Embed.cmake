# npufuse_embed_dir(TARGET DIR GLOB SYMBOL)
# Embeds every file matching GLOB under DIR into a static library TARGET that
# exposes `const npufuse::EmbeddedFile* SYMBOL(size_t* count)`: the data files
# travel inside the binary, so an installed npufuse needs no data directory.
function(npufuse_embed_dir target dir glob symbol)
  file(GLOB_RECURSE _files CONFIGURE_DEPENDS ${dir}/${glob})
  list(SORT _files)
  set(_out ${CMAKE_BINARY_DIR}/embedded/${target}.cc)
  add_custom_command(
    OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${_out} -DSYMBOL=${symbol}
            "-DFILES=${_files}" -P ${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake
    DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake
    COMMENT "Embedding ${dir}"
    VERBATIM)
  add_library(${target} STATIC ${_out})
  target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR}/src)
endfunction()
