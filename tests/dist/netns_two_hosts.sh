#!/bin/sh
# Two "hosts" on one machine: two network namespaces joined by a veth pair
# (10.a.b.1 and 10.a.b.2), one MPI rank in each, real TCP between them
# (--mca btl tcp,self on the veth's subnet). mpirun runs in the first
# namespace; it starts the second rank's orted through an "rsh agent" that
# is this machine's `ip netns exec` (in a UTS namespace of its own, so the
# second "host" has its own hostname) instead of ssh; the agent is mpirun's
# child, so the remote side inherits its environment (no -x needed). Every name is unique
# to this run, and a trap tears everything down.
#
#   netns_two_hosts.sh MPIEXEC PROGRAM [ARGS...]
# Exit: the program's status under mpirun; 77 (ctest's SKIP_RETURN_CODE)
# when namespaces cannot be made here (no CAP_NET_ADMIN, no iproute2).
set -u
mpiexec=$1
shift
tag=$$
nsa=wkA$tag nsb=wkB$tag va=wkva$tag vb=wkvb$tag
net=10.$((tag % 200 + 20)).$(((tag / 200) % 250 + 1))
ipa=$net.1 ipb=$net.2
dir=$(mktemp -d /tmp/wick-netns.XXXXXX) || exit 1

cleanup() {
    ip netns pids "$nsa" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns pids "$nsb" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    ip link del "$va" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: no ip(8) (iproute2) on this machine"
    exit 77
fi
if ! ip netns add "$nsa" 2>"$dir/err"; then
    echo "SKIP: cannot create a network namespace (ip netns add: $(cat "$dir/err"); needs root / CAP_NET_ADMIN)"
    exit 77
fi
if ! unshare --uts true 2>"$dir/err"; then
    echo "SKIP: cannot make a UTS namespace (unshare --uts: $(cat "$dir/err"); needs CAP_SYS_ADMIN)"
    exit 77
fi
set -e
ip netns add "$nsb"
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$nsa"
ip link set "$vb" netns "$nsb"
ip -n "$nsa" addr add "$ipa/24" dev "$va"
ip -n "$nsb" addr add "$ipb/24" dev "$vb"
ip -n "$nsa" link set lo up
ip -n "$nsb" link set lo up
ip -n "$nsa" link set "$va" up
ip -n "$nsb" link set "$vb" up
set +e

# The rsh agent: Open MPI calls it as `agent HOST COMMAND...` (the command
# written for a remote shell); run it in HOST's namespace.
cat >"$dir/agent" <<AGENT
#!/bin/sh
host=\$1
shift
case "\$host" in
$ipb) exec ip netns exec $nsb unshare --uts sh -c "hostname wick-host-b; \$*" ;;
*) exec sh -c "\$*" ;;
esac
AGENT
chmod +x "$dir/agent"
printf '%s slots=1\n%s slots=1\n' "$ipa" "$ipb" >"$dir/hosts"

echo "netns_two_hosts: $nsa ($ipa) <-> $nsb ($ipb) over veth $va/$vb"
ip netns exec "$nsa" unshare --uts sh -c "hostname wick-host-a; exec \"\$0\" \"\$@\"" \
    "$mpiexec" --hostfile "$dir/hosts" -np 2 --map-by node \
    --mca plm_rsh_agent "$dir/agent" --mca btl tcp,self \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
    "$@"
rc=$?
echo "netns_two_hosts: mpirun exit status $rc"
exit $rc
