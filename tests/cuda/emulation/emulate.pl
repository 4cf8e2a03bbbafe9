#!/usr/bin/env perl
# Rewrites a src/ops/cuda/*.cu or *.cuh file into plain C++ for the emulated run (see
# cuda_runtime.h): every launch `kernel<<<grid, block>>>(args)` becomes
# `::emu::launch(grid, block, sync, [&] { kernel(args); })`, where sync says whether that
# kernel's body synchronizes its block (__syncthreads, or block_sum / block_max*, which do).
# Perl because every Debian has it (CI has no Python). Usage: emulate.pl IN OUT
use strict;
use warnings;

my ($in, $out) = @ARGV;
open(my $fh, '<', $in) or die "$in: $!";
my $src = do { local $/; <$fh> };
close($fh);

my $parens = qr/(\((?:[^()]++|(?-1))*\))/;
my $braces = qr/(\{(?:[^{}]++|(?-1))*\})/;
my %sync;
while ($src =~ /__global__\s+void\s+(\w+)\s*$parens\s*$braces/g) {
  my ($name, $body) = ($1, $3);
  $sync{$name} = 1 if $body =~ /__syncthreads|block_(?:sum|max)\w*\(/;
}

$src =~ s{([\w:]+(?:<[^<>;]*>)?)<<<(.*?)>>>$parens}{
  my ($kernel, $config, $args) = ($1, $2, $3);
  (my $name = $kernel) =~ s/<.*//;
  $name =~ s/.*:://;
  my $flag = $sync{$name} ? 'true' : 'false';
  "::emu::launch($config, $flag, [&] { $kernel$args; })"
}gse;

open($fh, '>', $out) or die "$out: $!";
print $fh $src;
close($fh);
